/**
 * The dashboard's runtime entry points for finding jobs and charting attempts: the filter read
 * from a page's query, a page with its count, the overview's counts and a chart, each refusing
 * bad input before any query (on the in-memory storage; the semantics are the conformance
 * suite's).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ValidationError } from '../../src/core/errors.js';
import type { Storage } from '../../src/core/storage.js';
import { memoryStorage } from '../../src/storage/memory/index.js';
import { attemptChart } from '../../src/runtime/charts.js';
import { findJobs, jobFilterFromQuery, searchJobs, summarizeJobs } from '../../src/runtime/job-search.js';

/** A storage whose every read fails the test: nothing may be asked of it. */
const untouchable = new Proxy({} as Storage, { get: () => assert.fail('storage touched') });

describe('jobFilterFromQuery', () => {
  it('reads exact names, prefixes ending in *, an id, a schedule and the text; leaves empty ones out', () => {
    const q = new URLSearchParams('status=dead&queue=email*&type=send&key=order-1*&id=7&schedule=nightly&q=Timeout&type=');
    assert.deepEqual(jobFilterFromQuery(q), { status: 'dead', queuePrefix: 'email', type: 'send', idempotencyKeyPrefix: 'order-1', id: '7', scheduleName: 'nightly', text: 'Timeout' });
    assert.deepEqual(jobFilterFromQuery({ queue: '*', type: '' }), { queue: '*' });
    assert.throws(() => jobFilterFromQuery({ bogus: '1' }), ValidationError);
  });
});

describe('findJobs, summarizeJobs, attemptChart', () => {
  it('a page with the count of the whole filter', async () => {
    const s = memoryStorage();
    await s.migrate();
    const base = { queue: 'default', priority: 0, runAfterMs: 0, maxAttempts: 1, idempotencyKey: null, timeoutMs: 1000, maxRuntimeMs: 1000 };
    await s.jobs.insert({ jobs: [1, 2, 3].map((i) => ({ ...base, type: 'a', payload: { i } })) });
    const found = await findJobs(s, { filter: { type: 'a' }, limit: 2 });
    assert.deepEqual(found.page.jobs.map((j) => j.id), ['3', '2']);
    assert.deepEqual(found.count, { count: 3, exact: true, estimated: false });
    assert.equal((await summarizeJobs(s)).statuses[0]!.count, 3);
    const chart = await attemptChart(s, { range: 'hour' });
    assert.equal(chart.buckets.length, 60);
    await s.close();
  });

  it('refuses bad input before asking the storage', async () => {
    await assert.rejects(findJobs(untouchable, { filter: { id: 'x' }, limit: 5 }), ValidationError);
    await assert.rejects(findJobs(untouchable, { limit: 5, countCap: 0 }), ValidationError);
    await assert.rejects(searchJobs(untouchable, { filter: { text: 'x'.repeat(201) }, limit: 5 }), ValidationError);
    await assert.rejects(summarizeJobs(untouchable, { cap: -1 }), ValidationError);
    await assert.rejects(attemptChart(untouchable, { range: 'year' as never }), ValidationError);
    await assert.rejects(attemptChart(untouchable, { range: 'day', topTypes: 0 }), ValidationError);
  });
});
