/**
 * The histogram bin CASE every adapter's attempts.series sends: evaluated by SQLite for values
 * at, just below and just above every edge, it gives core's binOf — the text is the same on
 * every database, and the conformance suite checks each one on real attempts.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { HISTOGRAM_EDGES_MS, binOf } from '../../src/core/charts.js';
import { binCase } from '../../src/storage/series-sql.js';

describe('binCase', () => {
  it('puts every value around every edge in the bin binOf gives', () => {
    const db = new Database(':memory:');
    const stmt = db.prepare(`SELECT ${binCase('v')} AS bin FROM (SELECT CAST(? AS INTEGER) AS v)`);
    const values = [0, ...HISTOGRAM_EDGES_MS.flatMap((e) => [e - 1, e, e + 1]), 10 * 86_400_000];
    for (const v of values) assert.equal((stmt.get(v) as { bin: number }).bin, binOf(v), `value ${v}`);
    db.close();
  });
});
