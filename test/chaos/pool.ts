/**
 * The chaos run's worker processes: real `leasehold worker` CLIs on the chaos handlers, spawned
 * through the process tests' CliProcess, and the signals aimed at them. Each signal resolves
 * only once it has taken effect (the process exited, or /proc says it is stopped), and
 * resolves to that moment, so the audit can tell what a process did before it.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { waitUntil } from '../process/support-checks.js';
import { CliProcess } from '../process/support-cli.js';

const here = path.dirname(fileURLToPath(import.meta.url));
export const HANDLERS = path.join(here, 'handlers.ts');

export interface WorkerSettings {
  /** the --db URL of the worker whose connections carry `tag` */
  url: (tag: string) => string;
  /** the connection tag of the worker numbered n */
  tag: (n: number) => string;
  concurrency: number;
  leaseMs: number;
  env: Record<string, string>;
}

export class ChaosWorker {
  /** SIGKILLed by the run */
  killed = false;
  /** SIGSTOPped and not yet SIGCONTed */
  frozen = false;
  /** sent SIGTERM at the end of the run */
  terminated = false;

  constructor(
    readonly proc: CliProcess,
    readonly workerId: string,
    /** what its database connections are named by */
    readonly tag: string,
  ) {}

  get pid(): number {
    return this.proc.pid;
  }

  /** Running, and not stopped by us. */
  get usable(): boolean {
    return this.proc.exit === null && !this.frozen && !this.killed;
  }
}

/** The process state letter from /proc (T: stopped), or null once it is gone. */
function procState(pid: number): string | null {
  try {
    // "pid (comm) S ...": the state follows the last ')'
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
  } catch {
    return null;
  }
}

export class WorkerPool {
  readonly all: ChaosWorker[] = [];
  #spawned = 0;

  constructor(private readonly settings: WorkerSettings) {}

  /** Start a worker; resolves once it logged worker.started. */
  async spawn(): Promise<ChaosWorker> {
    const s = this.settings;
    const tag = s.tag(++this.#spawned);
    const args = ['--db', s.url(tag), 'worker', '--handlers', HANDLERS, '--concurrency', String(s.concurrency), '--lease', `${s.leaseMs}ms`, '--poll', '100ms', '--shutdown-deadline', '5s'];
    const proc = new CliProcess(args, s.env);
    const started = await proc.waitFor('worker.started', 60_000);
    const w = new ChaosWorker(proc, String(started.workerId), tag);
    this.all.push(w);
    return w;
  }

  usable(): ChaosWorker[] {
    return this.all.filter((w) => w.usable);
  }

  byWorkerId(id: string | null): ChaosWorker | undefined {
    return this.all.find((w) => w.workerId === id);
  }

  /** Workers that exited without being told to. */
  crashed(): ChaosWorker[] {
    return this.all.filter((w) => w.proc.exit !== null && !w.killed && !w.terminated);
  }

  /** SIGKILL; resolves to when its exit was seen. */
  async kill(w: ChaosWorker): Promise<number> {
    w.killed = true;
    w.proc.signal('SIGKILL');
    return (await w.proc.waitExit(30_000)).at;
  }

  /** SIGSTOP; resolves to a moment when the process was seen stopped. */
  async freeze(w: ChaosWorker): Promise<number> {
    w.frozen = true;
    w.proc.signal('SIGSTOP');
    await waitUntil(`pid ${w.pid} is stopped`, () => ['T', 't', null].includes(procState(w.pid)), 10_000, 2);
    return Date.now();
  }

  /** SIGCONT; resolves to the moment it was sent. */
  thaw(w: ChaosWorker): number {
    w.proc.signal('SIGCONT');
    w.frozen = false;
    return Date.now();
  }

  /** SIGTERM every worker still running (after SIGCONT); SIGKILL any that does not exit in time. Resolves to each worker's exit. */
  async stopAll(): Promise<{ pid: number; code: number | null; signal: string | null }[]> {
    const alive = this.all.filter((w) => w.proc.exit === null);
    for (const w of alive) {
      w.terminated = true;
      if (w.frozen) this.thaw(w);
      w.proc.signal('SIGTERM');
    }
    for (const w of alive) {
      await w.proc.waitExit(30_000).catch(() => {
        w.proc.signal('SIGKILL');
      });
    }
    await Promise.all(alive.map((w) => w.proc.exited));
    return alive.map((w) => ({ pid: w.pid, code: w.proc.exit?.code ?? null, signal: w.proc.exit?.signal ?? null }));
  }
}
