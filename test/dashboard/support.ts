/**
 * Helpers for the dashboard tests: a storage with a few jobs in known states (one dead with an
 * attacker-style `<script>` payload and error), cookie handling for `app.request`, and
 * extraction of the CSRF token from a rendered page.
 */
import type { Storage } from '../../src/core/storage.js';
import type { createDashboard } from '../../src/dashboard/index.js';
import { Client } from '../../src/runtime/client.js';
import { withOperatorApi } from '../../src/runtime/operator.js';
import { memoryStorage } from '../../src/storage/memory/index.js';

export const XSS = '<script>alert(1)</script>';

export interface Seeded {
  client: Client;
  /** the client with the operator calls (queue health, throughput, schedule actions) beside its own */
  full: ReturnType<typeof withOperatorApi<Client>>;
  deadId: string;
  queuedId: string;
  succeededId: string;
}

/** Enqueue and drive jobs through storage directly (no worker): deterministic and fast. */
export async function seed(storage: Storage): Promise<Seeded> {
  const client = new Client({ storage });
  const dead = await client.enqueue('send-email', { to: 'a@example.com', note: XSS }, { maxAttempts: 1 });
  const ok = await client.enqueue('report', { day: '2026-01-01' });
  const queued = await client.enqueue('send-email', { to: 'b@example.com' }, { delayMs: 3_600_000 });
  await client.enqueue('orphan-type', { n: 1 });
  const claimed = await storage.leases.claim({ workerId: 'w-test', types: ['send-email', 'report'], queues: null, limit: 10, leaseMs: 30_000 });
  const byId = new Map(claimed.map((j) => [j.id, j]));
  const d = byId.get(dead.id)!;
  const s = byId.get(ok.id)!;
  const error = { code: 'HANDLER_ERROR', message: `mail provider said ${XSS}`, stack: `Error: ${XSS}\n    at handler (jobs.ts:1:1)` };
  await storage.leases.finish({ items: [
    { id: d.id, leaseToken: d.leaseToken, status: 'dead', error, attempt: { outcome: 'dead', error } },
    { id: s.id, leaseToken: s.leaseToken, status: 'succeeded', attempt: { outcome: 'succeeded' } },
  ] });
  return { client, full: withOperatorApi(client), deadId: dead.id, queuedId: queued.id, succeededId: ok.id };
}

/** A tiny cookie jar for `app.request`. */
export class Jar {
  readonly cookies = new Map<string, string>();

  absorb(res: Response): Response {
    for (const line of res.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const i = pair!.indexOf('=');
      const name = pair!.slice(0, i).trim();
      const value = pair!.slice(i + 1).trim();
      if (value === '' || /max-age=0/i.test(line)) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
    return res;
  }

  header(): string {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }
}

export function csrfOf(page: string): string {
  const m = /name="csrf" value="([^"]+)"/.exec(page);
  if (!m) throw new Error('no csrf field on the page');
  return m[1]!;
}

export function form(fields: Record<string, string>): URLSearchParams {
  return new URLSearchParams(fields);
}

export const TOKEN = 'test-token-0123456789abcdef';
export type App = ReturnType<typeof createDashboard>;


export async function get(app: App, path: string, jar = new Jar(), headers: Record<string, string> = {}) {
  const res = jar.absorb(await app.request(path, { headers: { cookie: jar.header(), ...headers } }));
  return { res, text: await res.text() };
}

/** A JSON endpoint's answer, parsed. */
export async function getJson<T = Record<string, unknown>>(app: App, path: string, jar = new Jar(), headers: Record<string, string> = {}) {
  const { res, text } = await get(app, path, jar, headers);
  return { res, text, body: (res.headers.get('content-type') ?? '').startsWith('application/json') ? (JSON.parse(text) as T) : undefined };
}

/** A page's <script> tags other than the dashboard's own (which must be the only one). */
export function foreignScripts(page: string): string[] {
  return [...page.matchAll(/<script\b[^>]*>/gi)].map((m) => m[0]).filter((t) => !/^<script src="[^"]*\/assets\/dashboard-[0-9a-f]{12}\.js" defer>$/.test(t));
}

export async function post(app: App, path: string, fields: Record<string, string>, jar = new Jar(), headers: Record<string, string> = {}, remoteAddress?: string) {
  const init = { method: 'POST', body: form(fields), headers: { cookie: jar.header(), 'content-type': 'application/x-www-form-urlencoded', origin: 'http://localhost', ...headers } };
  // the Node server's connection, as @hono/node-server passes it: the throttle reads the peer address from it
  const env = remoteAddress === undefined ? undefined : { incoming: { socket: { remoteAddress } } };
  const res = jar.absorb(await app.request(path, init, env));
  return { res, text: await res.text() };
}

/** A fresh, migrated memory storage with the seeded jobs: each test starts from the same state. */
/** `clock`: the storage's clock (default Date.now), e.g. one a test stops after seeding. */
export async function seededMemory(clock?: () => number): Promise<{ storage: Storage; s: Seeded }> {
  const storage = memoryStorage(clock ? { clock } : {});
  await storage.migrate();
  return { storage, s: await seed(storage) };
}
