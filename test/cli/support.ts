/**
 * Helpers for the CLI tests: run `node --import tsx src/cli/bin.ts` as a child process against
 * a SQLite file in a temp directory, and read the database back in-process.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Storage } from '../../src/core/storage.js';
import { sqliteStorage } from '../../src/storage/sqlite/index.js';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
export const FIXTURES = path.join(ROOT, 'test', 'cli', 'fixtures');

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Run the CLI with these arguments (cwd = repo root, so tsx resolves); bounded by `timeoutMs`. */
export function cli(args: string[], opts: { env?: Record<string, string>; timeoutMs?: number } = {}): Promise<CliResult> {
  const env: NodeJS.ProcessEnv = { ...process.env, LEASEHOLD_LOG_LEVEL: 'info', ...opts.env };
  if (!opts.env?.LEASEHOLD_DB) delete env.LEASEHOLD_DB;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'src/cli/bin.ts'), ...args], {
      cwd: ROOT,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`leasehold ${args.join(' ')} did not exit within ${opts.timeoutMs ?? 60_000} ms\nstdout: ${stdout}\nstderr: ${stderr}`));
    }, opts.timeoutMs ?? 60_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** A temp directory with a database path in it; `db` is the --db URL. */
export function tempDb(): { dir: string; file: string; db: string; cleanup: () => void } {
  const dir = mkdtempSync(path.join(tmpdir(), 'leasehold-cli-'));
  const file = path.join(dir, 'jobs.db');
  return { dir, file, db: `sqlite:${file}`, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** Open the same file in-process to look at what the CLI wrote. */
export async function withDb<T>(file: string, fn: (s: Storage) => Promise<T>): Promise<T> {
  const s = sqliteStorage({ path: file });
  try {
    return await fn(s);
  } finally {
    await s.close();
  }
}

export async function jobCount(file: string): Promise<number> {
  return withDb(file, async (s) => (await s.queues.counts()).reduce((a, c) => a + c.count, 0));
}

/** The JSON log lines (pino) in a process's stdout. */
export function logLines(stdout: string): { event?: string; [k: string]: unknown }[] {
  return stdout
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as { event?: string });
}
