/**
 * Liveness and readiness: `/healthz` 200 while the event loop runs (503 after a stall);
 * `/readyz` 200 on a migrated database of every kind, 503 with the reason on an unmigrated
 * one, a schema newer than the code, a database that does not answer and a server whose
 * connections drop at once.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { type AddressInfo, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, test } from 'node:test';
import type { Storage } from '../../src/core/storage.js';
import { createHealth } from '../../src/observe/health.js';
import { createObserveApp, serveObserve } from '../../src/observe/server.js';
import { memoryStorage } from '../../src/storage/memory/index.js';
import { mysqlStorage } from '../../src/storage/mysql/index.js';
import { postgresStorage } from '../../src/storage/postgres/index.js';
import { sqliteStorage } from '../../src/storage/sqlite/index.js';
import { TEST_URLS } from '../support/databases.js';
import type { StorageKind } from '../runtime/support.js';
import { STORAGE_KINDS, describeEachKind, openTestStorage } from '../runtime/support.js';
import { dropMysqlTables, dropPostgresSchema } from '../runtime/support-storages.js';

/** A database of `kind` where leasehold never ran `migrate`. */
function unmigrated(kind: StorageKind): { storage: Storage; cleanup: () => Promise<void> } {
  const id = randomBytes(5).toString('hex');
  switch (kind) {
    case 'memory':
      return { storage: memoryStorage(), cleanup: async () => {} };
    case 'sqlite': {
      const dir = mkdtempSync(path.join(tmpdir(), 'leasehold-health-'));
      const storage = sqliteStorage({ path: path.join(dir, 'jobs.db') });
      return { storage, cleanup: async () => (await storage.close(), rmSync(dir, { recursive: true, force: true })) };
    }
    case 'postgres': {
      const storage = postgresStorage({ connectionString: TEST_URLS.postgres, schema: `lh_health_${id}` });
      return { storage, cleanup: async () => (await storage.close(), await dropPostgresSchema(`lh_health_${id}`)) };
    }
    case 'mysql': {
      const storage = mysqlStorage({ uri: TEST_URLS.mysql, tablePrefix: `lh_health_${id}_` });
      return { storage, cleanup: async () => (await storage.close(), await dropMysqlTables(`lh_health_${id}_`)) };
    }
  }
}

async function getJson(url: string): Promise<{ status: number; body: { ok: boolean; reason?: string; [k: string]: unknown } }> {
  const res = await fetch(url);
  return { status: res.status, body: (await res.json()) as { ok: boolean; reason?: string } };
}


await describeEachKind('health', STORAGE_KINDS, (kind) => {
  test('a migrated database: /healthz and /readyz answer 200 over HTTP', async () => {
    const { storage, cleanup } = await openTestStorage(kind);
    const health = createHealth({ storage });
    const running = await serveObserve({ port: 0, health });
    try {
      const live = await getJson(`${running.url}healthz`);
      assert.equal(live.status, 200);
      assert.equal(live.body.ok, true);
      const ready = await getJson(`${running.url}readyz`);
      assert.deepEqual(ready, { status: 200, body: { ok: true, schemaVersion: storage.expectedSchemaVersion, expectedSchemaVersion: storage.expectedSchemaVersion } });
    } finally {
      await running.close();
      health.close();
      await cleanup();
    }
  });

  test('an unmigrated database: /readyz 503, naming `leasehold migrate`', async () => {
    const { storage, cleanup } = unmigrated(kind);
    const health = createHealth({ storage });
    try {
      const res = await createObserveApp({ health }).request('/readyz');
      assert.equal(res.status, 503);
      const body = (await res.json()) as { ok: boolean; reason: string; schemaVersion: number };
      assert.equal(body.ok, false);
      assert.equal(body.schemaVersion, 0);
      assert.match(body.reason, /schema is at version 0, this code needs \d+: run `leasehold migrate`/);
      assert.equal((await createObserveApp({ health }).request('/healthz')).status, 200, 'alive all the same');
    } finally {
      health.close();
      await cleanup();
    }
  });
});

describe('health: what makes it fail', () => {
  test('a schema newer than the code: 503, upgrade leasehold', async () => {
    const storage = memoryStorage();
    await storage.migrate();
    const ahead = new Proxy(storage, { get: (t, p) => (p === 'schemaVersion' ? async () => t.expectedSchemaVersion + 1 : Reflect.get(t, p, t)) });
    const health = createHealth({ storage: ahead });
    const r = await health.readyz();
    health.close();
    assert.equal(r.status, 503);
    assert.match(r.body.reason ?? '', /newer than this code knows .*upgrade leasehold/);
  });

  test('a database that does not answer: 503 once the timeout passed', async () => {
    const storage = memoryStorage();
    await storage.migrate();
    const hung = new Proxy(storage, { get: (t, p) => (p === 'now' ? () => new Promise<never>(() => {}) : Reflect.get(t, p, t)) });
    const health = createHealth({ storage: hung, timeoutMs: 100 });
    const r = await health.readyz();
    health.close();
    assert.equal(r.status, 503);
    assert.match(r.body.reason ?? '', /memory database is unreachable: no answer within 100 ms/);
  });

  test('PostgreSQL and MySQL servers that do not answer (the connection dropped at once): 503, unreachable', async () => {
    // a port held by this test, whose connections close at once: no other process can take it meanwhile
    const closer = createServer((socket) => socket.destroy());
    await new Promise<void>((r) => closer.listen(0, '127.0.0.1', r));
    const { port } = closer.address() as AddressInfo;
    try {
      for (const storage of [postgresStorage({ connectionString: `postgres://postgres@127.0.0.1:${port}/test`, connectTimeoutMs: 2_000 }), mysqlStorage({ uri: `mysql://root@127.0.0.1:${port}/test` })]) {
        const health = createHealth({ storage, timeoutMs: 10_000 });
        const r = await health.readyz();
        health.close();
        await storage.close();
        assert.equal(r.status, 503, storage.dialect);
        assert.match(r.body.reason ?? '', new RegExp(`the ${storage.dialect} database is unreachable: .+`));
      }
    } finally {
      closer.close();
    }
  });

  test('an event loop that stalled past the limit: /healthz 503, then 200 again', async () => {
    const health = createHealth({ maxEventLoopDelayMs: 1_000 });
    try {
      await new Promise((r) => setTimeout(r, 50));
      const until = Date.now() + 1_500;
      while (Date.now() < until) {
        // a handler hogging the CPU
      }
      await new Promise((r) => setTimeout(r, 50));
      const stalled = health.healthz();
      assert.equal(stalled.status, 503);
      assert.match(stalled.body.reason ?? '', /the event loop stalled for \d+ ms \(limit 1000 ms\)/);
      assert.ok((stalled.body.eventLoopDelayMs as number) >= 1_000);
      await new Promise((r) => setTimeout(r, 50));
      assert.equal(health.healthz().status, 200, 'the window restarts at each check');
    } finally {
      health.close();
    }
  });
});
