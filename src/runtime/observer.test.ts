import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ClaimedJob } from '../core/storage.js';
import { type WorkerObserver, combineObservers } from './observer.js';

const job = { id: '1', type: 't' } as ClaimedJob;

/** An observer that logs what it sees under its name and runs the next one inside its "context". */
function logging(name: string, log: string[]): WorkerObserver {
  return {
    attempt: (_job, run) => {
      log.push(`${name} in`);
      run();
      log.push(`${name} out`);
      return { ended: (end) => void log.push(`${name} ended ${end.outcome}`) };
    },
  };
}

test('several observers: each runs the next inside itself, the handler runs once, each hears the end', () => {
  const log: string[] = [];
  const errors: unknown[] = [];
  const o = combineObservers([logging('metrics', log), logging('tracing', log)], (e) => errors.push(e));
  const seen = o?.attempt?.(job, () => void log.push('handler'));
  seen?.ended({ outcome: 'succeeded', durationMs: 1 });
  assert.deepEqual(log, ['metrics in', 'tracing in', 'handler', 'tracing out', 'metrics out', 'tracing ended succeeded', 'metrics ended succeeded']);
  assert.deepEqual(errors, []);
});

test('an observer that throws, forgets to run the handler, runs it twice or late, or throws at the end never stops or repeats the job', async () => {
  for (const bad of [
    { attempt: () => { throw new Error('before run'); } },
    { attempt: (_j, run) => { run(); throw new Error('after run'); } },
    { attempt: () => undefined },
    { attempt: (_j, run) => (run(), run(), undefined) },
    { attempt: (_j, run) => void setImmediate(run) },
    { attempt: (_j, run) => (run(), { ended: () => { throw new Error('at the end'); } }) },
  ] satisfies WorkerObserver[]) {
    for (const list of [[bad], [bad, logging('other', [])], [logging('other', []), bad]]) {
      let runs = 0;
      const errors: unknown[] = [];
      const seen = combineObservers(list, (e) => errors.push(e))?.attempt?.(job, () => void runs++);
      seen?.ended({ outcome: 'failed', durationMs: 1 });
      await new Promise((r) => setImmediate(r));
      assert.equal(runs, 1, 'the handler ran exactly once');
      const expected = bad.attempt.toString().includes('throw') ? 1 : 0;
      assert.equal(errors.length, expected, `errors reported: ${errors.map(String).join(', ')}`);
    }
  }
});
