/** The in-memory adapter against the shared storage conformance suite, and its one-step migration history. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { memoryStorage } from '../../src/storage/memory/index.js';
import { runStorageConformance } from '../conformance/index.js';
import { SCHEMA_VERSION } from './schema-expected.js';

runStorageConformance({
  name: 'memory',
  async create() {
    const storage = memoryStorage();
    await storage.migrate();
    return {
      storage,
      // one process, one instance: "another connection" is the same object
      connectAnother: async () => storage,
      cleanup: () => storage.close(),
    };
  },
});

describe('memory migrations', () => {
  it('the baseline is migration 1, applied once; a second migrate applies nothing', async () => {
    const storage = memoryStorage();
    assert.equal(await storage.schemaVersion(), 0);
    assert.deepEqual(await storage.migrate(), { from: 0, to: SCHEMA_VERSION, applied: [{ version: 1, name: 'baseline' }] });
    assert.equal(await storage.schemaVersion(), SCHEMA_VERSION);
    assert.deepEqual(await storage.migrate(), { from: SCHEMA_VERSION, to: SCHEMA_VERSION, applied: [] });
    await storage.close();
  });

  it('a closed storage refuses every call', async () => {
    const storage = memoryStorage();
    await storage.migrate();
    await storage.close();
    await assert.rejects(storage.now(), /closed/);
    await assert.rejects(storage.jobs.get({ id: '1' }), /closed/);
    await assert.rejects(storage.migrate(), /closed/);
  });
});
