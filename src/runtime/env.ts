/**
 * What every runtime service shares: a logger, a source of randomness, and the in-process
 * wake-up bus. Injected so tests can pin them.
 */
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import { pino } from 'pino';
import type { Logger } from 'pino';
import type { Storage } from '../core/storage.js';

export type { Logger };

/** One JSON line per event on stdout; LEASEHOLD_LOG_LEVEL sets the level (default info). */
export function defaultLogger(): Logger {
  return pino({ level: process.env.LEASEHOLD_LOG_LEVEL ?? 'info', base: { pid: process.pid } });
}

export function newWorkerId(): string {
  return `${os.hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
}

/**
 * In-process signals between a client and the workers sharing its Storage object: an enqueue
 * wakes idle workers at once instead of at their next poll; a cancel aborts the local handler
 * without waiting for the next heartbeat.
 */
export class LocalBus extends EventTarget {
  static readonly #buses = new WeakMap<Storage, LocalBus>();

  static for(storage: Storage): LocalBus {
    let bus = LocalBus.#buses.get(storage);
    if (!bus) {
      bus = new LocalBus();
      LocalBus.#buses.set(storage, bus);
    }
    return bus;
  }

  jobsEnqueued(): void {
    this.dispatchEvent(new Event('enqueued'));
  }

  jobCancelled(id: string): void {
    this.dispatchEvent(new CustomEvent('cancelled', { detail: id }));
  }
}
