/**
 * Bad input changes nothing (DESIGN §2.8): every rejected enqueue throws a typed
 * ValidationError with a stable code, and the database holds no job afterwards — the same on
 * every database, for times, delays, keys and nesting past the supported range (src/core/limits.ts).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { z } from 'zod';
import type { EnqueueOptions } from '../../src/core/index.js';
import { LATEST_TIME_MS, MAX_DELAY_MS, ValidationError } from '../../src/core/index.js';
import { Client } from '../../src/runtime/client.js';
import { createLocks } from '../../src/runtime/locks.js';
import { defineJob } from '../../src/runtime/job-definition.js';
import { openStorage, parseDbUrl } from '../../src/storage/open.js';
import { Harness, STORAGE_KINDS, describeEachKind } from './support.js';

const typed = defineJob({ type: 'typed', schema: z.object({ userId: z.number().int().positive() }), handler: () => {} });
const plain = defineJob({ type: 'plain', handler: () => {} });

/** `depth` arrays (or objects) around 1. */
function nested(depth: number, wrap: (v: unknown) => unknown = (v) => [v]): unknown {
  let v: unknown = 1;
  for (let i = 0; i < depth; i++) v = wrap(v);
  return v;
}

function circular(): unknown {
  const o: Record<string, unknown> = { a: 1 };
  o.self = o;
  return o;
}

const BAD_PAYLOADS: [string, () => unknown, string][] = [
  ['BigInt', () => ({ n: 10n }), 'INVALID_PAYLOAD'],
  ['function', () => ({ f: () => 1 }), 'INVALID_PAYLOAD'],
  ['NaN', () => ({ x: Number.NaN }), 'INVALID_PAYLOAD'],
  ['Infinity', () => [Infinity], 'INVALID_PAYLOAD'],
  ['Date', () => ({ when: new Date() }), 'INVALID_PAYLOAD'],
  ['Map', () => new Map([['a', 1]]), 'INVALID_PAYLOAD'],
  ['undefined at the top', () => undefined, 'INVALID_PAYLOAD'],
  ['circular', circular, 'INVALID_PAYLOAD'],
  ['oversized', () => ({ blob: 'x'.repeat(70 * 1024) }), 'PAYLOAD_TOO_LARGE'],
  ['30,000 nested arrays', () => nested(30_000), 'INVALID_PAYLOAD'],
  ['65 nested objects', () => nested(65, (v) => ({ v })), 'INVALID_PAYLOAD'],
];

const BAD_OPTIONS: [string, EnqueueOptions, RegExp][] = [
  ['negative delayMs', { delayMs: -1 }, /delayMs/],
  ['NaN delayMs', { delayMs: Number.NaN }, /delayMs/],
  ['maxAttempts 0', { maxAttempts: 0 }, /maxAttempts/],
  ['maxAttempts -1', { maxAttempts: -1 }, /maxAttempts/],
  ['maxAttempts 1.5', { maxAttempts: 1.5 }, /maxAttempts/],
  ['invalid runAt string', { runAt: 'not a date' }, /runAt/],
  ['invalid runAt Date', { runAt: new Date(Number.NaN) }, /runAt/],
  ['runAt and delayMs together', { runAt: new Date(), delayMs: 5 }, /runAt or delayMs/],
  ['empty queue name', { queue: '' }, /queue/],
  ['queue name with a space', { queue: 'has space' }, /queue/],
  ['queue name too long', { queue: 'q'.repeat(129) }, /queue/],
  ['priority out of range', { priority: 40_000 }, /priority/],
  ['timeoutMs 0', { timeoutMs: 0 }, /timeoutMs/],
  ['empty idempotency key', { idempotencyKey: '' }, /idempotencyKey/],
  ['idempotency key of 256 characters', { idempotencyKey: 'k'.repeat(256) }, /idempotencyKey/],
  ['idempotency key with NUL', { idempotencyKey: 'k\u0000' }, /idempotencyKey.*NUL/],
  ['idempotency key with a lone high surrogate', { idempotencyKey: 'k\uD800' }, /idempotencyKey.*surrogate/],
  ['idempotency key with a lone low surrogate', { idempotencyKey: 'k\uDC00' }, /idempotencyKey.*surrogate/],
  ['delayMs 2**53', { delayMs: 2 ** 53 }, /delayMs/],
  ['delayMs past 100 years', { delayMs: MAX_DELAY_MS + 1 }, /delayMs/],
  ['runAt after 9999', { runAt: new Date(LATEST_TIME_MS + 1) }, /runAt must be from 1970/],
  ['runAt past what JavaScript holds', { runAt: new Date(8.64e15) }, /runAt/],
  ['runAt before 1970', { runAt: new Date(-1) }, /runAt must be from 1970/],
  ['runAt in year 500', { runAt: '0500-01-01T00:00:00Z' }, /runAt must be from 1970/],
  ['runAt a guess', { runAt: '5' }, /runAt is not a valid ISO 8601 date/],
  ['runAt a day that does not exist', { runAt: '2030-02-31' }, /runAt is not a valid ISO 8601 date/],
];

await describeEachKind('bad input writes nothing', STORAGE_KINDS, (kind) => {
  let h: Harness;
  let strict: Client;
  before(async () => {
    h = await Harness.open(kind);
    strict = h.clientWith([typed, plain]);
  });
  after(() => h.close());

  async function rejects(op: () => Promise<unknown>, code: string, message?: RegExp): Promise<void> {
    await assert.rejects(op, (e: unknown) => {
      assert.ok(e instanceof ValidationError, `expected a ValidationError, got ${String(e)}`);
      assert.equal(e.code, code);
      if (message) assert.match(e.message, message);
      return true;
    });
    assert.equal(await h.totalJobs(), 0, 'nothing was written');
  }

  for (const [name, payload, code] of BAD_PAYLOADS) {
    test(`payload: ${name} → ${code}`, async () => {
      await rejects(() => h.client.enqueue('plain', payload()), code);
      await rejects(() => strict.enqueue('plain', payload()), code);
    });
  }

  test('the payload limit is configurable per client', async () => {
    const tiny = new Client({ storage: h.storage, maxPayloadBytes: 20 });
    await rejects(() => tiny.enqueue('plain', { s: 'more than twenty bytes' }), 'PAYLOAD_TOO_LARGE', /20/);
  });

  test('payload failing the type schema → PAYLOAD_SCHEMA, with the path in the message', async () => {
    await rejects(() => strict.enqueue('typed', { userId: 'seven' }), 'PAYLOAD_SCHEMA', /userId/);
    await rejects(() => strict.enqueue('typed', {}), 'PAYLOAD_SCHEMA', /userId/);
  });

  test('unknown type when the client has job definitions → UNKNOWN_JOB_TYPE', async () => {
    await rejects(() => strict.enqueue('nope', {}), 'UNKNOWN_JOB_TYPE', /nope/);
  });

  test('malformed job type → INVALID_OPTION', async () => {
    for (const t of ['', 'with space', 'x'.repeat(129)]) await rejects(() => h.client.enqueue(t, {}), 'INVALID_OPTION', /job type/);
  });

  for (const [name, opts, message] of BAD_OPTIONS) {
    test(`option: ${name} → INVALID_OPTION`, async () => {
      await rejects(() => h.client.enqueue('plain', {}, opts), 'INVALID_OPTION', message);
    });
  }

  test('enqueueMany with one bad item writes none of them', async () => {
    await rejects(
      () =>
        strict.enqueueMany([
          { type: 'plain', payload: { i: 1 } },
          { type: 'typed', payload: { userId: 1 } },
          { type: 'typed', payload: { userId: -1 } },
        ]),
      'PAYLOAD_SCHEMA',
    );
    await rejects(
      () =>
        h.client.enqueueMany([
          { type: 'plain', payload: { i: 1 } },
          { type: 'plain', payload: { i: 2 }, options: { maxAttempts: 0 } },
        ]),
      'INVALID_OPTION',
    );
  });

  test('locks: an owner with NUL, or a slot count other than the holders’, is refused before a slot is taken', async () => {
    const locks = createLocks(h.storage);
    await assert.rejects(locks.tryAcquire('bad-owner', { owner: 'o\u0000' }), (e: unknown) => e instanceof ValidationError && /owner/.test(e.message));
    assert.deepEqual(await locks.list('bad-owner'), []);
    const held = await Promise.all([1, 2, 3].map(() => locks.tryAcquire('sem', { slots: 3 })));
    assert.ok(held.every((l) => l !== null));
    await assert.rejects(locks.tryAcquire('sem', { slots: 4 }), (e: unknown) => e instanceof ValidationError && /semaphore of 3/.test(e.message));
    assert.equal((await locks.list('sem')).length, 3, 'no fourth holder');
    for (const l of held) await locks.release(l!);
  });

  test('control: the same batch without the bad item is written (in a separate database)', async () => {
    const other = await Harness.open(kind);
    try {
      const ok = await other.clientWith([typed, plain]).enqueueMany([
        { type: 'plain', payload: { i: 1 } },
        { type: 'typed', payload: { userId: 1 } },
      ]);
      assert.equal(ok.length, 2);
      assert.equal(await other.totalJobs(), 2);
    } finally {
      await other.close();
    }
  });

  test('control: the edges of the range, and payload strings with NUL and lone surrogates, are stored and read back exactly (in a separate database)', async () => {
    const other = await Harness.open(kind);
    try {
      const odd = { s: 'x\uD800y', n: 'a\u0000b', ['k\u0000\uDC00']: ['\uDBFF'] };
      const edges = await other.client.enqueueMany([
        { type: 'plain', payload: odd, options: { runAt: new Date(0) } },
        { type: 'plain', payload: odd, options: { runAt: '9999-12-31T23:59:59.999Z' } },
        { type: 'plain', payload: {}, options: { delayMs: MAX_DELAY_MS, idempotencyKey: 'k😀'.repeat(85) } },
      ]);
      const [first, last, far] = await Promise.all(edges.map((j) => other.job(j.id)));
      assert.equal(first!.runAt.toISOString(), '1970-01-01T00:00:00.000Z');
      assert.equal(last!.runAt.toISOString(), '9999-12-31T23:59:59.999Z');
      assert.ok(far!.runAt.getTime() - Date.now() > MAX_DELAY_MS - 60_000, far!.runAt.toISOString());
      assert.equal(far!.idempotencyKey, 'k😀'.repeat(85));
      assert.deepEqual([first!.payload, last!.payload], [odd, odd]);
      const listed = await other.client.listJobs();
      assert.deepEqual(listed.map((j) => Number.isNaN(j.runAt.getTime())), [false, false, false], 'every listed time is a time');
    } finally {
      await other.close();
    }
  });
});

describe('invalid database URLs → INVALID_URL', () => {
  const BAD_URLS = ['', '   ', 'nope://x', 'sqlite:', 'postgres://', 'mysql://host', 'mysql://host/', 'not a url', 'http://example.com/db'];
  for (const url of BAD_URLS) {
    test(JSON.stringify(url), async () => {
      assert.throws(() => parseDbUrl(url), (e: unknown) => e instanceof ValidationError && e.code === 'INVALID_URL');
      await assert.rejects(() => openStorage(url), (e: unknown) => e instanceof ValidationError && e.code === 'INVALID_URL');
    });
  }

  test('good URLs parse', () => {
    assert.deepEqual(parseDbUrl('sqlite:/tmp/x.db'), { kind: 'sqlite', target: '/tmp/x.db' });
    assert.equal(parseDbUrl('memory:').kind, 'memory');
    assert.equal(parseDbUrl('postgres://u@h:5432/db?schema=s').schema, 's');
    assert.equal(parseDbUrl('mariadb://u@h/db').kind, 'mysql');
  });
});
