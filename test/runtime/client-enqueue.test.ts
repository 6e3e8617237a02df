/**
 * Client.enqueueMany's own work around jobs.insert: per-type defaults, payloads stored as given
 * in order, one tx per batch, and results that never share an object — the client marks the
 * rows an adapter hands back in place instead of copying them.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { z } from 'zod';
import { ValidationError } from '../../src/core/errors.js';
import type { InsertResult, JobRow, NewJob, Storage } from '../../src/core/storage.js';
import { Client } from '../../src/runtime/client.js';
import { defineJob } from '../../src/runtime/job-definition.js';
import { memoryStorage } from '../../src/storage/memory/index.js';

function row(id: string, j: NewJob): JobRow {
  const now = new Date();
  return {
    id, queue: j.queue, type: j.type, payload: j.payload, status: 'queued', priority: j.priority, runAt: now, attempts: 0,
    maxAttempts: j.maxAttempts, idempotencyKey: j.idempotencyKey, lockedBy: null, leaseToken: null, lockedUntil: null,
    heartbeatAt: null, startedAt: null, finishedAt: null, lastErrorCode: null, lastError: null, timeoutMs: j.timeoutMs,
    maxRuntimeMs: j.maxRuntimeMs, createdAt: now, updatedAt: now,
  };
}

/** A storage whose jobs.insert answers with `answer` and records what it was given. */
function stubStorage(answer: (jobs: readonly NewJob[]) => InsertResult[]): { storage: Storage; calls: NewJob[][] } {
  const calls: NewJob[][] = [];
  const storage = {
    dialect: 'stub',
    capabilities: { multiProcess: false, transactionalEnqueue: false, listenNotify: false },
    jobs: {
      insert: async ({ jobs }: { jobs: readonly NewJob[] }) => {
        calls.push([...jobs]);
        return answer(jobs);
      },
    },
  } as unknown as Storage;
  return { storage, calls };
}

describe('client enqueueMany', () => {
  test('an adapter handing out one object for two results still yields two results with their own created flag', async () => {
    const { storage } = stubStorage((jobs) => {
      const first = row('1', jobs[0] as NewJob);
      return [{ job: first, created: true, outcome: 'created' }, { job: row('2', jobs[1] as NewJob), created: true, outcome: 'created' }, { job: first, created: false, outcome: 'existing' }];
    });
    const client = new Client({ storage });
    const res = await client.enqueueMany([
      { type: 'a', payload: 1, options: { idempotencyKey: 'k' } },
      { type: 'a', payload: 2 },
      { type: 'a', payload: 3, options: { idempotencyKey: 'k' } },
    ]);
    assert.deepEqual(res.map((r) => [r.id, r.created, r.outcome]), [['1', true, 'created'], ['2', true, 'created'], ['1', false, 'existing']]);
    assert.notEqual(res[0], res[2]);
  });

  test('per-type defaults reach storage item by item in order, each payload as given (the schema runs again before the handler)', async () => {
    const { storage, calls } = stubStorage((jobs) => jobs.map((j, i) => ({ job: row(String(i + 1), j), created: true, outcome: 'created' as const })));
    const typed = defineJob({ type: 'typed', queue: 'billing', priority: 3, maxAttempts: 2, timeoutMs: 50, maxRuntimeMs: 60, schema: z.object({ n: z.preprocess(Number, z.number()) }), handler: () => {} });
    const plain = defineJob({ type: 'plain', handler: () => {} });
    const client = new Client({ storage, jobs: [typed, plain], defaults: { queue: 'q0', maxAttempts: 7 } });
    await client.enqueueMany([
      { type: 'typed', payload: { n: '1' } },
      { type: 'plain', payload: { n: '2' } },
      { type: 'typed', payload: { n: '3' }, options: { priority: 9 } },
    ]);
    const sent = calls[0] ?? [];
    assert.deepEqual(sent.map((j) => [j.type, j.payload, j.queue, j.priority, j.maxAttempts, j.timeoutMs, j.maxRuntimeMs]), [
      ['typed', { n: '1' }, 'billing', 3, 2, 50, 60],
      ['plain', { n: '2' }, 'q0', 0, 7, 300_000, 3_600_000],
      ['typed', { n: '3' }, 'billing', 9, 2, 50, 60],
    ]);
  });

  test('a bad item anywhere, or mixed tx handles, writes nothing', async () => {
    const { storage, calls } = stubStorage(() => []);
    const client = new Client({ storage, jobs: [defineJob({ type: 'typed', schema: z.object({ n: z.number() }), handler: () => {} })] });
    await assert.rejects(client.enqueueMany([{ type: 'typed', payload: { n: 1 } }, { type: 'typed', payload: { n: 'x' } }]), (e: unknown) => e instanceof ValidationError && e.code === 'PAYLOAD_SCHEMA');
    await assert.rejects(client.enqueueMany([{ type: 'typed', payload: { n: 1 } }, { type: 'nope', payload: {} }]), (e: unknown) => e instanceof ValidationError);
    await assert.rejects(client.enqueueMany([{ type: 'typed', payload: { n: 1 }, options: { tx: {} } }, { type: 'typed', payload: { n: 1 } }]), /same tx/);
    assert.equal(calls.length, 0);
  });

  test('with a real adapter: results are the stored rows, each its own object', async () => {
    const storage = memoryStorage();
    const client = new Client({ storage });
    const res = await client.enqueueMany([{ type: 'm', payload: { a: 1 } }, { type: 'm', payload: { a: 2 } }]);
    for (const r of res) {
      assert.equal(r.created, true);
      assert.equal(r.outcome, 'created');
      const { created: _created, outcome: _outcome, ...stored } = r;
      assert.deepEqual(await storage.jobs.get({ id: r.id }), stored);
    }
    await storage.close();
  });
});
