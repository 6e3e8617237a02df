/** `leasehold cancel` and `leasehold retry` record who asked in the job's history: this OS user on this host. */
import assert from 'node:assert/strict';
import { hostname, userInfo } from 'node:os';
import { after, test } from 'node:test';
import { cli, tempDb, withDb } from './support.js';

const t = tempDb();
after(() => t.cleanup());

test('cancel then retry from the CLI: two events by cli:<user>@<host>, from the host', async () => {
  assert.equal((await cli(['--db', t.db, 'migrate'])).code, 0);
  const e = await cli(['--db', t.db, 'enqueue', 'audited', '--delay', '1h', '--json']);
  assert.equal(e.code, 0, e.stderr);
  const { id } = JSON.parse(e.stdout) as { id: string };
  for (const verb of ['cancel', 'retry']) {
    const r = await cli(['--db', t.db, verb, id]);
    assert.equal(r.code, 0, r.stderr);
  }
  const actor = `cli:${userInfo().username}@${hostname()}`;
  const events = await withDb(t.file, (s) => s.jobs.events({ jobId: id }));
  assert.deepEqual(events.map((x) => [x.kind, x.actor, x.source, x.detail.status]), [['cancelled', actor, hostname(), 'queued'], ['retried', actor, hostname(), 'cancelled']]);
});
