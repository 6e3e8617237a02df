/**
 * The forked worker processes (child.ts) a drain or latency measurement runs in: start one and
 * wait for it to be ready, wait for a message from it, stop them all. Each child reports over
 * IPC how many jobs it has run, the latencies it saw, and any error.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { SystemDef } from './common.ts';
import { log } from './log.ts';

const here = dirname(fileURLToPath(import.meta.url));

export interface Child {
  cp: ChildProcess;
  done: number;
  lats: number[];
  error?: string;
}

/** Fork a worker process for `sys`; resolves once it says it is ready. */
export function spawnChild(sys: SystemDef, concurrency: number, mode: 'drain' | 'latency'): Promise<Child> {
  const cp = fork(join(here, 'child.ts'), [sys.id, String(concurrency), mode], {
    execArgv: ['--import', 'tsx'],
    env: { ...process.env },
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  const child: Child = { cp, done: 0, lats: [] };
  return new Promise((resolve, reject) => {
    cp.on('message', (m: { ready?: boolean; done?: number; lat?: number; error?: string }) => {
      if (m.ready) resolve(child);
      if (m.done !== undefined) child.done = Math.max(child.done, m.done);
      if (m.lat !== undefined) child.lats.push(m.lat);
      if (m.error) {
        child.error = m.error;
        log(`  ! ${sys.id} worker: ${m.error.split('\n')[0]}`);
      }
    });
    cp.on('exit', (code) => reject(new Error(`${sys.id} worker exited early (${code})`)));
  });
}

/** Resolves on the first message from `cp` that carries `what`; fails after `ms`. */
export function waitFor(cp: ChildProcess, what: string, ms: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), ms);
    const on = (m: Record<string, unknown>) => {
      if (m[what] !== undefined) {
        clearTimeout(t);
        cp.off('message', on);
        resolve();
      }
    };
    cp.on('message', on);
  });
}

/** Ask each child to stop; one that has not exited within 10 s is killed. */
export async function stopChildren(children: Child[]): Promise<void> {
  await Promise.all(
    children.map(async (c) => {
      c.cp.removeAllListeners('exit');
      const exited = new Promise<void>((r) => (c.cp.exitCode !== null ? r() : c.cp.once('exit', () => r())));
      c.cp.send({ stop: true });
      const t = setTimeout(() => c.cp.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(t);
    }),
  );
}
