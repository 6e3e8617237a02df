/**
 * Shared by the *-wakeups tests: a worker that polls once an hour, so a job it runs soon was
 * brought by a pushed wake-up, and an enqueue from another process.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import type { Storage } from '../../src/core/storage.js';
import { defineJob } from '../../src/runtime/job-definition.js';
import { Worker } from '../../src/runtime/worker.js';

const ENQUEUE = path.join(import.meta.dirname, 'fixtures', 'wakeups-enqueue.ts');

/** An hour: longer than any test runs, so only a wake-up can start a job. */
export const NEVER_POLL_MS = 3_600_000;

/** Enqueue one due job of `type` from a child process; resolves once it has exited. */
export function enqueueElsewhere(url: string, type: string): Promise<void> {
  const p = spawn(process.execPath, ['--import', 'tsx', ENQUEUE, url, type], { stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  p.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
  return new Promise((resolve, reject) => {
    p.on('error', reject);
    p.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`enqueue child exited ${code}: ${err}`))));
  });
}

/** A started worker of `type` that never polls, once its first claim (before any job exists) has come back empty. */
export async function idleWorker(storage: Storage, type: string): Promise<{ worker: Worker; ran: () => Promise<number> }> {
  let runs = 0;
  let onRun: () => void = () => {};
  let firstClaim: () => void = () => {};
  const claimedOnce = new Promise<void>((r) => (firstClaim = r));
  const job = defineJob({ type, handler: () => {
    runs += 1;
    onRun();
  } });
  const worker = new Worker({ storage, jobs: [job], pollIntervalMs: NEVER_POLL_MS, scheduler: false, observers: [{ claimed: () => firstClaim() }] });
  await worker.start();
  await claimedOnce;
  /** Resolves with the run count once one more job has run. */
  const ran = (): Promise<number> => {
    const seen = runs;
    return new Promise((resolve) => {
      onRun = () => {
        if (runs > seen) resolve(runs);
      };
    });
  };
  return { worker, ran };
}
