/**
 * Shared by the postgres-*.test.ts suites: a job to enqueue, and each suite's throwaway
 * schemas, storages and connections, all closed and dropped after the suite.
 */
import { randomBytes } from 'node:crypto';
import { after } from 'node:test';
import pg from 'pg';
import type { NewJob } from '../../src/core/storage.js';
import { PostgresStorage, postgresStorage } from '../../src/storage/postgres/index.js';

export function job(type: string, over: Partial<NewJob> = {}): NewJob {
  return { queue: 'default', type, payload: { n: 1 }, priority: 0, runAfterMs: 0, maxAttempts: 3, idempotencyKey: null, timeoutMs: 60_000, maxRuntimeMs: 600_000, ...over };
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Call inside a describe: storages on fresh schemas and plain clients for its tests, and an
 * after() hook that closes them and drops the schemas. Storages a test makes itself go in
 * `made` and their schemas in `schemas`.
 */
export function postgresFixtures(url: string | null) {
  const made: PostgresStorage[] = [];
  const schemas: string[] = [];
  const clients: pg.Client[] = [];

  function fresh(schema = `lh_t_${randomBytes(6).toString('hex')}`): PostgresStorage {
    if (!schemas.includes(schema)) schemas.push(schema);
    const s = postgresStorage({ connectionString: url as string, schema, poolSize: 3 });
    made.push(s);
    return s;
  }

  async function client(): Promise<pg.Client> {
    const c = new pg.Client({ connectionString: url as string });
    c.on('error', () => {});
    await c.connect();
    clients.push(c);
    return c;
  }

  after(async () => {
    for (const s of made) await s.close();
    const admin = await client();
    for (const schema of schemas) await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    for (const c of clients) await c.end().catch(() => {});
  });

  return { made, schemas, fresh, client };
}
