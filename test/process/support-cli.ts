/**
 * The `leasehold` CLI as a child process for the process-level tests: spawned from source
 * through tsx, its stdout parsed into JSON log lines as they arrive, with bounded waits for a
 * log event or for the exit, and `killAll` to clean up every child still alive.
 */
import type { ChildProcess } from 'node:child_process';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
export const ROOT = path.resolve(here, '../..');
export const BIN = path.join(ROOT, 'src/cli/bin.ts');

/** One pino line. */
export interface LogLine {
  level: number;
  time: number;
  pid: number;
  msg?: string;
  event?: string;
  workerId?: string;
  jobId?: string;
  [k: string]: unknown;
}

export interface ExitInfo {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** Date.now() when the exit was observed */
  at: number;
}

type Match = string | ((l: LogLine) => boolean);

const live = new Set<CliProcess>();

/** A spawned `leasehold …` process with its parsed stdout log. */
export class CliProcess {
  readonly child: ChildProcess;
  readonly lines: LogLine[] = [];
  readonly spawnedAt = Date.now();
  readonly exited: Promise<ExitInfo>;
  exit: ExitInfo | null = null;
  stdout = '';
  stderr = '';
  #partial = '';
  #listeners = new Set<() => void>();

  constructor(readonly args: string[], env: Record<string, string>) {
    this.child = spawn(process.execPath, ['--import', 'tsx', BIN, ...args], {
      cwd: ROOT,
      env: { ...process.env, LEASEHOLD_LOG_LEVEL: 'info', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    live.add(this);
    this.child.stdout?.setEncoding('utf8').on('data', (chunk: string) => this.#onStdout(chunk));
    this.child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
      this.stderr += chunk;
    });
    // Exit time is taken at 'exit'; the process counts as exited at 'close', once its stdout
    // is fully read, so no log line can arrive after a wait saw the exit.
    let exitAt = 0;
    this.child.on('exit', () => {
      exitAt = Date.now();
    });
    this.exited = new Promise((resolve) => {
      this.child.on('close', (code, signal) => {
        this.exit = { code, signal, at: exitAt || Date.now() };
        live.delete(this);
        resolve(this.exit);
        this.#notify();
      });
    });
  }

  get pid(): number {
    return this.child.pid ?? -1;
  }

  /** The worker id from the `worker.started` line (throws if not seen yet). */
  get workerId(): string {
    const l = this.lines.find((x) => x.event === 'worker.started');
    if (!l?.workerId) throw new Error(`pid ${this.pid}: no worker.started line yet`);
    return l.workerId;
  }

  events(match: Match): LogLine[] {
    const pred = toPred(match);
    return this.lines.filter(pred);
  }

  #onStdout(chunk: string): void {
    this.stdout += chunk;
    const parts = (this.#partial + chunk).split('\n');
    this.#partial = parts.pop() ?? '';
    for (const p of parts) {
      if (!p.trim()) continue;
      try {
        this.lines.push(JSON.parse(p) as LogLine);
      } catch {
        // a non-JSON line (plain CLI output): keep it in stdout only
      }
    }
    this.#notify();
  }

  #notify(): void {
    for (const l of [...this.#listeners]) l();
  }

  /** Resolve with the first log line matching (already seen or future); fail on timeout or exit. */
  waitFor(match: Match, timeoutMs = 15_000): Promise<LogLine> {
    const pred = toPred(match);
    return new Promise((resolve, reject) => {
      const check = () => {
        const hit = this.lines.find(pred);
        if (hit) return finish(() => resolve(hit));
        if (this.exit) return finish(() => reject(new Error(`pid ${this.pid} exited (${JSON.stringify(this.exit)}) before ${describe(match)}\n${this.tail()}`)));
      };
      const timer = setTimeout(() => finish(() => reject(new Error(`timed out after ${timeoutMs} ms waiting for ${describe(match)} from pid ${this.pid}\n${this.tail()}`))), timeoutMs);
      const finish = (f: () => void) => {
        clearTimeout(timer);
        this.#listeners.delete(check);
        f();
      };
      this.#listeners.add(check);
      check();
    });
  }

  /** Wait for exit, bounded. */
  async waitExit(timeoutMs = 15_000): Promise<ExitInfo> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`pid ${this.pid} did not exit within ${timeoutMs} ms\n${this.tail()}`)), timeoutMs);
    });
    try {
      return await Promise.race([this.exited, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  signal(sig: NodeJS.Signals): void {
    if (!this.exit) this.child.kill(sig);
  }

  /** The last lines of output, for failure messages. */
  tail(n = 15): string {
    const out = this.stdout.trim().split('\n').slice(-n).join('\n');
    return `--- stdout (last ${n} lines) of ${this.args.join(' ')}\n${out}\n--- stderr\n${this.stderr.trim().slice(-2_000)}`;
  }
}

function toPred(match: Match): (l: LogLine) => boolean {
  return typeof match === 'string' ? (l) => l.event === match : match;
}

function describe(match: Match): string {
  return typeof match === 'string' ? `event ${match}` : 'a matching log line';
}

/** SIGKILL every child still alive (a SIGSTOPped one too); for `after` hooks and finally blocks. */
export async function killAll(): Promise<void> {
  const procs = [...live];
  for (const p of procs) {
    p.child.kill('SIGKILL');
  }
  await Promise.all(procs.map((p) => p.exited));
}
