/**
 * Shared by the sqlite-*.test.ts suites: a job to enqueue, database files in temporary
 * directories that are removed after the test file, and child processes on one file.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after } from 'node:test';
import type { NewJob } from '../../src/core/storage.js';
import type { SqliteDriverName } from '../../src/storage/sqlite/index.js';
import { sqliteStorage } from '../../src/storage/sqlite/index.js';
import { harnessDb } from '../conformance/harness.js';
import type { ConformanceHarness } from '../conformance/index.js';

export function job(type: string, over: Partial<NewJob> = {}): NewJob {
  return { queue: 'default', type, payload: { n: 1 }, priority: 0, runAfterMs: 0, maxAttempts: 3, idempotencyKey: null, timeoutMs: 60_000, maxRuntimeMs: 600_000, ...over };
}

/** Call once per test file: returns tempFile(), a new database path each call; an after() hook removes them all. */
export function tempFiles(): () => string {
  const dirs: string[] = [];
  after(() => {
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });
  return function tempFile(): string {
    const dir = mkdtempSync(path.join(tmpdir(), 'leasehold-sqlite-'));
    dirs.push(dir);
    return path.join(dir, 'jobs.db');
  };
}

export interface Child {
  ready: Promise<void>;
  /** start now, or at this epoch ms */
  go(at?: number): void;
  /** the child's last stdout line, parsed */
  result: Promise<unknown>;
}

const CHILD = path.join(import.meta.dirname, 'fixtures', 'sqlite-child.ts');

/** Spawn fixtures/sqlite-child.ts: it prints "ready", waits for "go", then prints one JSON line. */
export function child(args: string[]): Child {
  const p = spawn(process.execPath, ['--import', 'tsx', CHILD, ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  let onReady: () => void = () => {};
  const ready = new Promise<void>((r) => (onReady = r));
  p.stdout.setEncoding('utf8').on('data', (d: string) => {
    out += d;
    if (out.startsWith('ready\n')) onReady();
  });
  p.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
  const result = new Promise<unknown>((resolve, reject) => {
    p.on('error', reject);
    p.on('close', (code) => {
      if (code !== 0) return reject(new Error(`child ${args.join(' ')} exited ${code}: ${err}`));
      resolve(JSON.parse(out.trim().split('\n').at(-1) ?? 'null'));
    });
  });
  return { ready, go: (at = 0) => p.stdin.end(`go ${at}\n`), result };
}

/** Start the children together (each waits for "go", then for one shared moment) and collect their results. */
export async function together<T>(kids: readonly Child[]): Promise<T[]> {
  await Promise.all(kids.map((k) => k.ready));
  const at = Date.now() + 100;
  for (const k of kids) k.go(at);
  return (await Promise.all(kids.map((k) => k.result))) as T[];
}

/** The conformance harness on a fresh file per suite; `connectAnother` opens a second connection, as another process would. */
export function sqliteConformance(name: string, driver?: SqliteDriverName): ConformanceHarness {
  return {
    name,
    create: async () => {
      const dir = mkdtempSync(path.join(tmpdir(), 'leasehold-sqlite-conf-'));
      const file = path.join(dir, 'jobs.db');
      return harnessDb(() => sqliteStorage({ path: file, ...(driver ? { driver } : {}) }), async () => rmSync(dir, { recursive: true, force: true }));
    },
  };
}
