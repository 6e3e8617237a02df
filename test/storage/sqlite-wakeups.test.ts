/**
 * SQLite wake-ups (wakeups.ts): an idle worker that polls once an hour still runs a job another
 * process enqueues, because the watch on the database's files wakes it; the watch outlives a
 * checkpoint that truncates the WAL, and sees what was committed while it rested; an in-memory
 * database has nothing to watch.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { sqliteStorage } from '../../src/storage/sqlite/index.js';
import { tempFiles } from './sqlite-support.js';
import { enqueueElsewhere, idleWorker } from './wakeups-support.js';

const tempFile = tempFiles();

describe('sqlite wake-ups: a watch on the database files', { timeout: 120_000 }, () => {
  // the watch and its rest hold nothing open (a worker's poll timer keeps its process alive): this holds the test's
  let alive: NodeJS.Timeout;
  before(() => void (alive = setInterval(() => {}, 60_000)));
  after(() => clearInterval(alive));

  it('a worker that never polls runs jobs enqueued by another process, also after a checkpoint truncated the WAL', async () => {
    const file = tempFile();
    const storage = sqliteStorage({ path: file });
    await storage.migrate();
    assert.equal(storage.capabilities.listenNotify, true);
    const { worker, ran } = await idleWorker(storage, 'pushed');
    try {
      let next = ran();
      await enqueueElsewhere(`sqlite:${file}`, 'pushed');
      assert.equal(await next, 1);

      const raw = new Database(file);
      try {
        const [cp] = raw.pragma('wal_checkpoint(TRUNCATE)') as { busy: number }[];
        assert.equal(cp?.busy, 0, 'the checkpoint ran');
      } finally {
        raw.close();
      }
      next = ran();
      await enqueueElsewhere(`sqlite:${file}`, 'pushed');
      assert.equal(await next, 2);
    } finally {
      await worker.stop({ deadlineMs: 5_000 });
      await storage.close();
    }
  });

  it('a commit while the watch rests after a change still wakes, when the watch is back', async () => {
    const file = tempFile();
    const storage = sqliteStorage({ path: file });
    await storage.migrate();
    const raw = new Database(file);
    raw.exec('CREATE TABLE elsewhere (x INTEGER)');
    const insert = raw.prepare('INSERT INTO elsewhere (x) VALUES (1)');
    let wakes = 0;
    let second: () => void = () => {};
    const woken = new Promise<void>((r) => (second = r));
    const unsubscribe = await storage.subscribe!({ onWake: () => {
      wakes += 1;
      // the first wake comes as the watch closes for its rest: this commit lands while none is open
      if (wakes === 1) insert.run();
      else second();
    } });
    try {
      insert.run();
      await woken;
      assert.ok(wakes >= 2);
    } finally {
      await unsubscribe();
      raw.close();
      await storage.close();
    }
  });

  it('subscribe stops waking after unsubscribe; an in-memory database has no subscribe', async () => {
    const file = tempFile();
    const storage = sqliteStorage({ path: file });
    await storage.migrate();
    let wakes = 0;
    let woken: () => void = () => {};
    const unsubscribe = await storage.subscribe!({ onWake: () => {
      wakes += 1;
      woken();
    } });
    await new Promise<void>((r) => {
      woken = r;
      void enqueueElsewhere(`sqlite:${file}`, 'x');
    });
    await unsubscribe();
    const after = wakes;
    await enqueueElsewhere(`sqlite:${file}`, 'x');
    // an event already read by the watch is delivered before the child's exit is
    await new Promise((r) => setImmediate(r));
    assert.equal(wakes, after, 'no wake-ups after unsubscribe');
    await storage.close();

    const memory = sqliteStorage({ path: ':memory:' });
    assert.equal(memory.capabilities.listenNotify, false);
    assert.equal(memory.subscribe, undefined);
    await memory.close();
  });
});
