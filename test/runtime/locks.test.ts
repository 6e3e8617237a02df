/**
 * The lock API (src/runtime/locks.ts) in one process: withLock keeps the lock past its TTL while
 * fn runs; when the lock is lost — an extend rejected because the lock expired and was taken,
 * or extends that never come back until the TTL runs out — fn's signal aborts with LOCK_LOST
 * and withLock rejects with it without touching the new holder; acquire waits, with a timeout.
 *
 * "Taken from it" is simulated with the memory storage's injectable clock (the database's
 * "now" jumps past the TTL, so another holder can acquire) and with a storage whose locks.extend
 * hangs (as a stalled connection would); the rest runs on every storage.
 */
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import type { Storage } from '../../src/core/storage.js';
import type { Lock } from '../../src/runtime/locks.js';
import { LockLostError, LockTimeoutError, createLocks } from '../../src/runtime/locks.js';
import { memoryStorage } from '../../src/storage/memory/index.js';
import type { StorageKind } from './support.js';
import { STORAGE_KINDS, describeEachKind, openTestStorage, overriding, waitFor } from './support.js';

const cleanups: (() => Promise<void>)[] = [];
after(async () => {
  for (const c of cleanups) await c();
});

/** A memory storage whose clock the test can move forward. */
async function skewedMemory(): Promise<{ storage: Storage; skip: (ms: number) => void }> {
  let skew = 0;
  const storage = memoryStorage({ clock: () => Date.now() + skew });
  await storage.migrate();
  cleanups.push(() => storage.close());
  return { storage, skip: (ms) => (skew += ms) };
}

/** `storage` with locks.extend replaced; every other method goes to the real storage. */
function withExtend(storage: Storage, extend: Storage['locks']['extend']): Storage {
  return overriding(storage, 'locks', 'extend', () => extend);
}

/** A fresh database of `kind`, dropped after the file. */
async function fresh(kind: StorageKind): Promise<Storage> {
  const { storage, cleanup } = await openTestStorage(kind);
  cleanups.push(cleanup);
  return storage;
}

await describeEachKind('withLock', STORAGE_KINDS, (kind) => {
  test('keeps the lock while fn runs past the TTL: extended, never free for another, released at the end', { timeout: 30_000 }, async () => {
    const storage = await fresh(kind);
    const mine = createLocks(storage, { owner: 'mine' });
    const other = createLocks(storage, { owner: 'other' });
    const TTL = 1_500;
    const out = await mine.withLock('long', { ttlMs: TTL }, async (signal, lock) => {
      const firstExpiry = lock.expiresAt.getTime();
      let tries = 0;
      // run well past the first expiry; meanwhile nobody else gets the lock and fn is not aborted
      await waitFor(
        async () => {
          assert.equal(await other.tryAcquire('long', { ttlMs: TTL }), null, 'another acquirer is refused while fn runs');
          assert.equal(signal.aborted, false, 'fn is not aborted');
          tries++;
          return (await storage.now()).getTime() > firstExpiry + TTL;
        },
        15_000,
        'fn to outlive its first TTL twice over',
      ).catch((e: unknown) => {
        throw e instanceof assert.AssertionError ? e : new Error(String(e));
      });
      const [row] = await mine.list('long');
      assert.ok(row && row.expiresAt.getTime() > firstExpiry + TTL, 'the lock was extended');
      assert.ok(tries > 1);
      return 'done';
    });
    assert.equal(out, 'done');
    assert.deepEqual(await mine.list('long'), [], 'released when fn returned');
    assert.ok(await other.tryAcquire('long', { ttlMs: TTL }), 'free for the next one');
  });

  test('a held lock: withLock waits up to timeoutMs, then LOCK_TIMEOUT without running fn', async () => {
    const storage = await fresh(kind);
    const a = createLocks(storage);
    await a.tryAcquire('busy', { ttlMs: 60_000 });
    let ran = false;
    await assert.rejects(
      a.withLock('busy', { ttlMs: 1_000, timeoutMs: 150, retryMs: 20 }, () => {
        ran = true;
      }),
      (e: unknown) => e instanceof LockTimeoutError && e.code === 'LOCK_TIMEOUT',
    );
    assert.equal(ran, false);
  });
});

// "taken from it" needs the database's clock to jump past the TTL, which a server's clock cannot;
// and a race of the lock's own timer against the database's expiry wants both on one clock
describe('withLock, a lost lock on one clock (memory)', () => {
  test('extends that never return: fn is aborted once the TTL has run out, before anyone else can be granted it', { timeout: 10_000 }, async () => {
    const real = await fresh('memory');
    const pending: (() => void)[] = [];
    const stalled = withExtend(real, (p) => new Promise((resolve) => pending.push(() => void real.locks.extend(p).then(resolve))));
    const locks = createLocks(stalled, { owner: 'stalled' });
    const other = createLocks(real, { owner: 'other' });
    let grantedBeforeAbort = false;
    await assert.rejects(
      locks.withLock('stall', { ttlMs: 300 }, async (signal) => {
        // poll the real storage for a takeover (every ms); it must not succeed before fn learns of the loss
        let taken: Lock | null = null;
        const until = Date.now() + 5_000;
        while (!(signal.aborted && taken)) {
          assert.ok(Date.now() < until, `no abort and takeover within 5 s (aborted: ${signal.aborted})`);
          const aborted = signal.aborted;
          taken ??= await other.tryAcquire('stall', { ttlMs: 60_000 });
          if (taken && !aborted && !signal.aborted) grantedBeforeAbort = true;
          await new Promise((r) => setTimeout(r, 1));
        }
        assert.ok(pending.length > 0, 'extends were attempted');
        for (const go of pending.splice(0)) go(); // the stalled extends now land: stale
        return 'late';
      }),
      (e: unknown) => e instanceof LockLostError,
    );
    // the extend timer aborts within a sixth of the TTL of expiry; the storage grants at expiry
    assert.equal(grantedBeforeAbort, false, 'nobody else held the lock while fn still believed it held it');
    assert.equal((await other.list('stall'))[0]?.owner, 'other');
  });

  test('an extend rejected (expired and taken over): signal aborts with LOCK_LOST, withLock rejects, the new holder keeps it', { timeout: 10_000 }, async () => {
    const { storage, skip } = await skewedMemory();
    const locks = createLocks(storage, { owner: 'old' });
    const thief = createLocks(storage, { owner: 'new' });
    let stolen: Lock | null = null;
    let reason: unknown;
    let fnDone = false;
    await assert.rejects(
      locks.withLock('taken', { ttlMs: 300 }, async (signal) => {
        skip(1_000); // the database's clock passes the TTL before any extend: the lock lapses
        stolen = await thief.tryAcquire('taken', { ttlMs: 60_000 });
        assert.ok(stolen, 'another acquirer gets the expired lock');
        await waitFor(() => signal.aborted, 5_000, 'the signal to abort');
        reason = signal.reason;
        fnDone = true;
        return 'finished anyway';
      }),
      (e: unknown) => e instanceof LockLostError && e.code === 'LOCK_LOST',
    );
    assert.ok(fnDone, 'withLock waited for fn to settle');
    assert.ok(reason instanceof LockLostError, 'the signal reason is LockLostError');
    const [row] = await thief.list('taken');
    assert.equal(row?.owner, 'new', 'the new holder still holds it (withLock did not release it)');
    assert.equal(await thief.extend(stolen!), true);
  });
});

await describeEachKind('acquire', STORAGE_KINDS, (kind) => {
  test('waits for the holder to release; gives up with LOCK_TIMEOUT after timeoutMs; an abort ends the wait', { timeout: 30_000 }, async () => {
    const storage = await fresh(kind);
    let tries = 0;
    const counting = overriding(storage, 'locks', 'acquire', (acquire) => (p) => {
      tries++;
      return acquire(p);
    });
    const holder = createLocks(storage, { owner: 'holder' });
    const waiter = createLocks(counting, { owner: 'waiter' });
    const held = await holder.tryAcquire('m', { ttlMs: 60_000 });
    assert.ok(held);

    await assert.rejects(waiter.acquire('m', { ttlMs: 1_000 }), (e: unknown) => e instanceof LockTimeoutError, 'timeoutMs 0: one try');
    tries = 0;
    // 2 s: room for more than one try even when a try's round trip is slow
    await assert.rejects(waiter.acquire('m', { ttlMs: 1_000, timeoutMs: 2_000, retryMs: 20 }), (e: unknown) => e instanceof LockTimeoutError && e.code === 'LOCK_TIMEOUT');
    assert.ok(tries > 1, `it retried while waiting (${tries} tries)`);

    tries = 0;
    const got = waiter.acquire('m', { ttlMs: 1_000, timeoutMs: 10_000, retryMs: 20 });
    await waitFor(() => tries >= 2, 5_000, 'the waiter to have tried twice');
    assert.equal(await holder.release(held), true);
    const lock = await got;
    assert.ok(lock.fence > held.fence, 'acquired once released, with a larger fence');
    assert.equal((await waiter.list('m'))[0]?.owner, 'waiter');

    const ac = new AbortController();
    const aborted = waiter.acquire('m', { ttlMs: 1_000, timeoutMs: 60_000, retryMs: 20, signal: ac.signal });
    tries = 0;
    await waitFor(() => tries >= 1, 5_000, 'a try');
    ac.abort();
    await assert.rejects(aborted, (e: unknown) => e instanceof LockTimeoutError);
  });

  test('bad parameters are rejected before the database is asked', async () => {
    const storage = await fresh(kind);
    const locks = createLocks(storage);
    await assert.rejects(locks.tryAcquire('x', { ttlMs: 0 }), { code: 'INVALID_OPTION' });
    await assert.rejects(locks.tryAcquire('x', { slots: 0 }), { code: 'INVALID_OPTION' });
    await assert.rejects(locks.tryAcquire('', {}), { name: 'ValidationError' });
    assert.deepEqual(await locks.list(), []);
  });
});
