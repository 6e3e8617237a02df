import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { declaredIndexes } from './schema-indexes.js';

describe('declaredIndexes', () => {
  it('reads CREATE INDEX statements, qualified or not, and skips comments and other statements', () => {
    const got = declaredIndexes([
      `-- CREATE INDEX not_me ON jobs (x);
CREATE TABLE "s".jobs (id bigserial PRIMARY KEY, key text PRIMARY KEY, UNIQUE (a, b));
CREATE INDEX jobs_due_idx ON "s".jobs (priority, run_at, id) WHERE status IN ('queued','failed');
CREATE UNIQUE INDEX IF NOT EXISTS lh_jobs_key_idx
  ON lh_jobs (idempotency_key) WHERE idempotency_key IS NOT NULL;
CREATE TRIGGER t AFTER DELETE ON lh_jobs BEGIN UPDATE f SET floor = OLD.id; END;`,
    ]);
    assert.deepEqual(got, [
      { table: 'jobs', name: 'jobs_due_idx', definition: `CREATE INDEX jobs_due_idx ON "s".jobs (priority, run_at, id) WHERE status IN ('queued','failed')` },
      { table: 'lh_jobs', name: 'lh_jobs_key_idx', definition: 'CREATE UNIQUE INDEX IF NOT EXISTS lh_jobs_key_idx ON lh_jobs (idempotency_key) WHERE idempotency_key IS NOT NULL' },
    ]);
  });

  it('reads KEY clauses inside CREATE TABLE (MySQL) as ALTER TABLE … ADD KEY, not PRIMARY KEY', () => {
    const got = declaredIndexes([
      `CREATE TABLE IF NOT EXISTS lh_jobs (
        id BIGINT NOT NULL,
        effect_key VARCHAR(10),
        PRIMARY KEY (id),
        UNIQUE KEY lh_jobs_key (effect_key),
        KEY lh_jobs_claim (status, priority,
          run_at)
      ) ENGINE=InnoDB`,
    ]);
    assert.deepEqual(got, [
      { table: 'lh_jobs', name: 'lh_jobs_key', definition: 'ALTER TABLE lh_jobs ADD UNIQUE KEY lh_jobs_key (effect_key)' },
      { table: 'lh_jobs', name: 'lh_jobs_claim', definition: 'ALTER TABLE lh_jobs ADD KEY lh_jobs_claim (status, priority, run_at)' },
    ]);
  });

  it('a later migration that adds or drops an index changes the list', () => {
    const got = declaredIndexes([
      'CREATE INDEX a_idx ON t (a); CREATE INDEX b_idx ON t (b)',
      'DROP INDEX IF EXISTS a_idx; ALTER TABLE t ADD INDEX c_idx (c)',
      'ALTER TABLE t DROP INDEX b_idx',
    ]);
    assert.deepEqual(got.map((i) => i.name), ['c_idx']);
  });
});
