/**
 * jobs.search: the filter's exact parts and prefixes (LIKE and GLOB specials taken literally,
 * case counting), pages both ways with their cursors, the text test (ASCII case folded, every
 * other character exact; payload JSON, last error and its code) bounded by scanLimit, and the
 * ValidationErrors, the same on every adapter.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ValidationError } from '../../src/core/errors.js';
import type { JobFilter, JobRow, JobSearch, Storage } from '../../src/core/storage.js';
import type { ConformanceHarness } from './index.js';
import { claimOne, finish, insertAndClaim, newJob, uniq, useDb } from './helpers.js';
import { scheduleOf } from './schedules.js';

/** Ids of a search's page. */
async function ids(s: Storage, filter: JobFilter, over: Partial<JobSearch> = {}): Promise<string[]> {
  return (await s.jobs.search({ filter, limit: 100, ...over })).jobs.map((j) => j.id);
}

async function insert(s: Storage, type: string, over: Parameters<typeof newJob>[1] = {}): Promise<JobRow> {
  const [r] = await s.jobs.insert({ jobs: [newJob(type, over)] });
  return r!.job;
}

const desc = (rows: { id: string }[]): string[] => rows.map((r) => r.id).sort((a, b) => Number(b) - Number(a));

export function searchTests(h: ConformanceHarness): void {
  describe('jobs.search', () => {
    const db = useDb(h);

    it('exact names and prefixes of exactly those characters: case counts, LIKE and GLOB specials are literal', async () => {
      const s = db.storage;
      const t = uniq('find');
      const dot = await insert(s, `${t}.a`);
      const upper = await insert(s, `${t}.A`);
      const under = await insert(s, `${t}_x`, { queue: `${t}-q_1` });
      const other = await insert(s, `${t}x`, { queue: `${t}-qx1` });
      assert.deepEqual(await ids(s, { type: `${t}.a` }), [dot.id]);
      assert.deepEqual(await ids(s, { typePrefix: `${t}.a` }), [dot.id], 'a prefix is case-sensitive');
      assert.deepEqual(await ids(s, { typePrefix: `${t}.` }), desc([dot, upper]));
      assert.deepEqual(await ids(s, { typePrefix: `${t}_` }), [under.id], '_ is not a wildcard');
      assert.deepEqual(await ids(s, { typePrefix: t }), desc([dot, upper, under, other]));
      assert.deepEqual(await ids(s, { queuePrefix: `${t}-q_` }), [under.id]);
      assert.deepEqual(await ids(s, { queue: `${t}-qx1`, typePrefix: t }), [other.id]);
      assert.deepEqual(await ids(s, { queue: `${t}-q` }), [], 'an exact queue is not a prefix');

      const k = uniq('key');
      const keyed = await Promise.all(['50%-off', '50x-off', 'a!b', 'k*1', 'k?1', 'k[1]', 'K*1'].map((key) => insert(s, `${t}.k`, { idempotencyKey: `${k}${key}` })));
      const byKey = (i: number): string => keyed[i]!.id;
      assert.deepEqual(await ids(s, { idempotencyKeyPrefix: `${k}50%` }), [byKey(0)]);
      assert.deepEqual(await ids(s, { idempotencyKeyPrefix: `${k}a!` }), [byKey(2)]);
      assert.deepEqual(await ids(s, { idempotencyKeyPrefix: `${k}k*` }), [byKey(3)]);
      assert.deepEqual(await ids(s, { idempotencyKeyPrefix: `${k}k?` }), [byKey(4)]);
      assert.deepEqual(await ids(s, { idempotencyKeyPrefix: `${k}k[` }), [byKey(5)]);
      assert.deepEqual(await ids(s, { idempotencyKeyPrefix: `${k}k` }), desc([keyed[3]!, keyed[4]!, keyed[5]!]));
      assert.deepEqual(await ids(s, { idempotencyKey: `${k}k*1` }), [byKey(3)]);
      assert.deepEqual(await ids(s, { idempotencyKey: `${k}k*` }), []);
    });

    it('status, id and schedule name; a filter with nothing matching finds nothing', async () => {
      const s = db.storage;
      const t = uniq('state');
      const queued = await insert(s, t);
      await insert(s, `${t}.dead`);
      const dead = await claimOne(s, `${t}.dead`);
      await finish(s, dead, { status: 'dead', attempt: { outcome: 'dead' } });
      const running = await insertAndClaim(s);
      const name = uniq('sched');
      await s.schedules.upsert({ items: [scheduleOf(name)] });
      const fired = await s.schedules.runNow({ name, job: { queue: 'default', type: t, payload: {}, priority: 0, maxAttempts: 1, timeoutMs: 1000, maxRuntimeMs: 1000 } });
      assert.deepEqual(await ids(s, { type: t, status: 'queued' }), desc([fired!, queued]));
      assert.deepEqual(await ids(s, { status: 'dead', typePrefix: t }), [dead.id]);
      assert.deepEqual(await ids(s, { status: 'running', id: running.id }), [running.id]);
      assert.deepEqual(await ids(s, { status: 'queued', id: running.id }), []);
      assert.deepEqual(await ids(s, { id: queued.id }), [queued.id]);
      assert.deepEqual(await ids(s, { id: '9000000000000000000' }), []);
      assert.deepEqual(await ids(s, { scheduleName: name }), [fired!.id]);
      const page = await s.jobs.search({ filter: { type: uniq('none') }, limit: 5 });
      assert.deepEqual(page, { jobs: [], older: null, newer: null, scanCapped: false });
    });

    it('pages both ways from either cursor, newest first, with the cursor of the page on each side', async () => {
      const s = db.storage;
      const t = uniq('page');
      const mine: string[] = [];
      for (let i = 0; i < 7; i++) {
        mine.push((await insert(s, t, { payload: { i } })).id);
        await insert(s, uniq('noise'));
      }
      const [j1, j2, j3, j4, j5, j6, j7] = mine;
      const filter = { type: t };
      const first = await s.jobs.search({ filter, limit: 3 });
      assert.deepEqual(first.jobs.map((j) => j.id), [j7, j6, j5]);
      assert.deepEqual([first.older, first.newer, first.scanCapped], [j5, null, false]);
      const second = await s.jobs.search({ filter, limit: 3, beforeId: first.older! });
      assert.deepEqual(second.jobs.map((j) => j.id), [j4, j3, j2]);
      assert.deepEqual([second.older, second.newer], [j2, j4]);
      const last = await s.jobs.search({ filter, limit: 3, beforeId: second.older! });
      assert.deepEqual(last.jobs.map((j) => j.id), [j1]);
      assert.deepEqual([last.older, last.newer], [null, j1]);
      // and back up: afterId pages are newest first too
      const up = await s.jobs.search({ filter, limit: 3, afterId: last.newer! });
      assert.deepEqual(up.jobs.map((j) => j.id), [j4, j3, j2]);
      assert.deepEqual([up.older, up.newer], [j2, j4]);
      const top = await s.jobs.search({ filter, limit: 3, afterId: up.newer! });
      assert.deepEqual(top.jobs.map((j) => j.id), [j7, j6, j5]);
      assert.deepEqual([top.older, top.newer], [j5, null]);
      // a cursor past every match: an empty page that still points back
      const past = await s.jobs.search({ filter, limit: 3, beforeId: j1! });
      assert.deepEqual([past.jobs, past.older, past.newer], [[], null, String(Number(j1) - 1)]);
      const bottom = await s.jobs.search({ filter, limit: 3, afterId: past.newer! });
      assert.deepEqual([bottom.jobs.map((j) => j.id), bottom.older, bottom.newer], [[j3, j2, j1], null, j3]);
      // a cursor above every match: the newest page, with nothing newer
      const above = await s.jobs.search({ filter, limit: 3, beforeId: String(Number(j7) + 1) });
      assert.deepEqual([above.jobs.map((j) => j.id), above.older, above.newer], [[j7, j6, j5], j5, null]);
    });

    it('text: a substring of the payload JSON, last error or its code, ASCII letters folded and every other character exact', async () => {
      const s = db.storage;
      const t = uniq('text');
      const note = await insert(s, t, { payload: { note: `Hello Wörld 100%_done ÉCOLE ${t}` } });
      await insert(s, `${t}.f`, { payload: { n: 1 } });
      const failed = await claimOne(s, `${t}.f`);
      await finish(s, failed, { status: 'failed', runAfterMs: 60_000, error: { code: 'E_CONN_RESET', message: 'Upstream TIMEOUT after 3 s' }, attempt: { outcome: 'failed' } });
      const find = (text: string) => ids(s, { typePrefix: t, text });
      assert.deepEqual(await find('hello wö'), [note.id]);
      assert.deepEqual(await find('HELLO WöRLD'), [note.id], 'A-Z folded');
      assert.deepEqual(await find('WÖRLD'), [], 'Ö is not ö: only A-Z fold');
      assert.deepEqual(await find('école'), [], 'nor is É é, in the stored text');
      assert.deepEqual(await find('Écol'), [note.id]);
      assert.deepEqual(await find('100%_d'), [note.id]);
      assert.deepEqual(await find('100x'), []);
      assert.deepEqual(await find('"note":"hello'), [note.id], 'the payload as JSON text');
      assert.deepEqual(await find('timeout after'), [failed.id], 'the last error');
      assert.deepEqual(await find('e_conn_reset'), [failed.id], 'the last error code');
      assert.deepEqual(await find('"n":1'), [failed.id]);
    });

    it('text is tested on the first scanLimit candidates from the cursor: the page says it stopped and where to go on', async () => {
      const s = db.storage;
      const t = uniq('scan');
      const rows: JobRow[] = [];
      for (let i = 0; i < 10; i++) rows.push(await insert(s, t, { payload: { hit: i === 1 || i === 8 ? 'needle' : 'hay' } }));
      const newest = [...rows].reverse().map((r) => r.id);
      const filter = { type: t, text: 'NEEDLE' };
      // candidates newest first: 9 8 7 | 6 5 4 | 3 2 1 | 0 — needles at 8 and 1
      const p1 = await s.jobs.search({ filter, limit: 5, scanLimit: 3 });
      assert.deepEqual([p1.jobs.map((j) => j.id), p1.older, p1.newer, p1.scanCapped], [[newest[1]], newest[2], null, true]);
      const p2 = await s.jobs.search({ filter, limit: 5, scanLimit: 3, beforeId: p1.older! });
      assert.deepEqual([p2.jobs.map((j) => j.id), p2.older, p2.newer, p2.scanCapped], [[], newest[5], String(Number(newest[2]) - 1), true]);
      const p3 = await s.jobs.search({ filter, limit: 5, scanLimit: 3, beforeId: p2.older! });
      assert.deepEqual([p3.jobs.map((j) => j.id), p3.older, p3.newer, p3.scanCapped], [[newest[8]], newest[8], newest[8], true]);
      const p4 = await s.jobs.search({ filter, limit: 5, scanLimit: 3, beforeId: p3.older! });
      assert.deepEqual([p4.jobs.map((j) => j.id), p4.older, p4.scanCapped], [[], null, false]);
      // a page that fills up stops at its last match, not at the window
      const full = await s.jobs.search({ filter, limit: 1, scanLimit: 100 });
      assert.deepEqual([full.jobs.map((j) => j.id), full.older, full.scanCapped], [[newest[1]], newest[1], false]);
      assert.deepEqual(await ids(s, filter, { scanLimit: 100 }), [newest[1], newest[8]]);
    });

    it('a filter no index answers reads only ids within readLimit of the cursor, and says where it stopped', async () => {
      const s = db.storage;
      const t = uniq('range');
      const key = uniq('rk');
      const a = await insert(s, t, { idempotencyKey: key });
      for (let i = 0; i < 6; i++) await insert(s, uniq('noise'));
      const b = await insert(s, t);
      for (let i = 0; i < 2; i++) await insert(s, uniq('noise'));
      const top = Number(b.id) + 3;
      const filter = { type: t };
      const p1 = await s.jobs.search({ filter, limit: 5, readLimit: 5 });
      assert.deepEqual([p1.jobs.map((j) => j.id), p1.older, p1.newer, p1.scanCapped], [[b.id], String(top - 5), null, true]);
      const p2 = await s.jobs.search({ filter, limit: 5, readLimit: 5, beforeId: p1.older! });
      assert.deepEqual([p2.jobs.map((j) => j.id), p2.older, p2.newer, p2.scanCapped], [[a.id], a.id, a.id, true]);
      assert.deepEqual(await ids(s, filter), [b.id, a.id], 'the default range reaches both');
      assert.deepEqual(await s.jobs.countMatching({ filter, readLimit: 5 }), { count: 1, exact: false, estimated: false });
      assert.deepEqual(await s.jobs.countMatching({ filter }), { count: 2, exact: true, estimated: false });
      // an indexed part reads its index, whatever the range
      assert.deepEqual(await ids(s, { type: t, idempotencyKey: key }, { readLimit: 1 }), [a.id]);
      assert.deepEqual(await ids(s, { type: t, id: a.id }, { readLimit: 1 }), [a.id]);
    });

    it('refuses a bad filter or page with a ValidationError, before any query', async () => {
      const s = db.storage;
      const bad: unknown[] = [
        { filter: { id: 'abc' }, limit: 5 },
        { filter: { id: '0' }, limit: 5 },
        { filter: { id: '99999999999999999999' }, limit: 5 },
        { filter: { text: 'x'.repeat(201) }, limit: 5 },
        { filter: { text: '' }, limit: 5 },
        { filter: { text: 'a\u0000b' }, limit: 5 },
        { filter: { status: 'nope' }, limit: 5 },
        { filter: { queue: 'a', queuePrefix: 'a' }, limit: 5 },
        { filter: { typePrefix: 'bad name!' }, limit: 5 },
        { filter: { q: 'x' }, limit: 5 },
        { filter: {}, limit: 0 },
        { filter: {}, limit: 501 },
        { filter: {}, limit: 5, beforeId: '3', afterId: '1' },
        { filter: {}, limit: 5, beforeId: '-1' },
        { filter: { text: 'x' }, limit: 5, scanLimit: 100_001 },
        { filter: { type: 'x' }, limit: 5, readLimit: 0 },
      ];
      for (const p of bad) await assert.rejects(s.jobs.search(p as JobSearch), ValidationError, JSON.stringify(p));
      await assert.rejects(s.jobs.countMatching({ filter: { id: '1.5' }, cap: 10 }), ValidationError);
      await assert.rejects(s.jobs.countMatching({ filter: {}, cap: 0 }), ValidationError);
    });
  });
}
