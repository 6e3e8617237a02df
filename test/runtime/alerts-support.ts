/**
 * What the alert tests share: a local HTTP receiver that records every notification POSTed to
 * it, a count of each worker's evaluator rounds read from the log, and a storage whose
 * alert transitions wait at a barrier (two evaluators that decided from the same read).
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { AlertNotification } from '../../src/core/index.js';
import type { AlertTransition, Storage } from '../../src/core/storage.js';
import { after, before } from 'node:test';
import { Harness, type LogCapture, type StorageKind } from './support.js';

/** A webhook receiver on 127.0.0.1, port 0; `status` decides each answer (default 200). */
export class Receiver {
  readonly received: AlertNotification[] = [];
  url = '';
  readonly #server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const n = JSON.parse(Buffer.concat(chunks).toString('utf8')) as AlertNotification;
      this.received.push(n);
      res.statusCode = this.status(n, this.received.length);
      res.end('ok');
    });
  });

  constructor(private readonly status: (n: AlertNotification, nth: number) => number = () => 200) {}

  static async start(status?: (n: AlertNotification, nth: number) => number): Promise<Receiver> {
    const r = new Receiver(status);
    await new Promise<void>((resolve) => r.#server.listen(0, '127.0.0.1', resolve));
    r.url = `http://127.0.0.1:${(r.#server.address() as AddressInfo).port}/hooks/alerts?token=secret`;
    return r;
  }

  of(state: 'firing' | 'resolved'): AlertNotification[] {
    return this.received.filter((n) => n.state === state);
  }

  close(): Promise<void> {
    this.#server.closeAllConnections();
    return new Promise((resolve) => this.#server.close(() => resolve()));
  }
}

/** Rounds each worker's evaluator has run (evaluated, or stood by for the lock's holder), by worker id. */
export function rounds(log: LogCapture): Map<string, number> {
  const out = new Map<string, number>();
  for (const e of log.entries) {
    if (e.event !== 'alerts.evaluated' && e.event !== 'alerts.standby') continue;
    const id = String(e.workerId);
    out.set(id, (out.get(id) ?? 0) + 1);
  }
  return out;
}

/** The worker ids whose evaluator evaluated (held the lock) at least once. */
export function evaluators(log: LogCapture): string[] {
  return [...new Set(log.events('alerts.evaluated').map((e) => String(e.workerId)))];
}

/** `storage` whose alert transitions go through `wrap` first. */
export function withTransition(storage: Storage, wrap: (p: AlertTransition, land: () => ReturnType<Storage['alerts']['transition']>) => ReturnType<Storage['alerts']['transition']>): Storage {
  const alerts = storage.alerts;
  const wrapped: Storage['alerts'] = {
    list: () => alerts.list(),
    transition: (p) => wrap(p, () => alerts.transition(p)),
  };
  return new Proxy(storage, {
    get(target, prop, receiver) {
      if (prop === 'alerts') return wrapped;
      const v = Reflect.get(target, prop, receiver) as unknown;
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
}

/** A harness on `kind` and a receiver for the enclosing describe block, opened before it (handed to `use`) and closed after. */
export function useAlertHarness(kind: StorageKind, use: (opened: { h: Harness; receiver: Receiver }) => void): void {
  let opened: { h: Harness; receiver: Receiver } | undefined;
  before(async () => {
    opened = { h: await Harness.open(kind), receiver: await Receiver.start() };
    use(opened);
  });
  after(async () => {
    await opened?.h.close();
    await opened?.receiver.close();
  });
}
