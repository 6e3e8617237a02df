import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ClaimedJob } from '../core/storage.js';
import { type AttemptEnd, type Observers, type WorkerObserver, combineObservers } from './observer.js';

const job = { id: '1', type: 't' } as ClaimedJob;
const end: AttemptEnd = { outcome: 'succeeded', durationMs: 1 };

/** An observer that logs what it sees under its name and runs the next one inside its "context". */
function logging(name: string, log: string[]): WorkerObserver {
  return {
    attempt: (_job, run) => {
      log.push(`${name} in`);
      run();
      log.push(`${name} out`);
      return { ended: (e) => void log.push(`${name} ended ${e.outcome}`) };
    },
  };
}

/** An observer that only counts: told before the handler starts and when it ends. */
function counting(name: string, log: string[]): WorkerObserver {
  return {
    started: () => {
      log.push(`${name} started`);
      return { ended: (e) => void log.push(`${name} ended ${e.outcome}`) };
    },
  };
}

/** Launch one attempt whose handler logs, and end it. */
function launch(o: Observers | undefined, log: string[]): void {
  const seen = o?.launch(job, { start: () => void log.push('handler') });
  if (seen) o?.ended(seen, end);
}

test('several observers: each runs the next inside itself, the handler runs once, each hears the end', () => {
  const log: string[] = [];
  const errors: unknown[] = [];
  launch(combineObservers([logging('metrics', log), logging('tracing', log)], (e) => errors.push(e)), log);
  assert.deepEqual(log, ['metrics in', 'tracing in', 'handler', 'tracing out', 'metrics out', 'tracing ended succeeded', 'metrics ended succeeded']);
  assert.deepEqual(errors, []);
});

test('observers that only count are told before the handler starts, alone or beside one that wraps it', () => {
  const log: string[] = [];
  launch(combineObservers([counting('metrics', log)], () => {}), log);
  assert.deepEqual(log.splice(0), ['metrics started', 'handler', 'metrics ended succeeded']);
  launch(combineObservers([counting('metrics', log), logging('tracing', log), counting('other', log)], () => {}), log);
  assert.deepEqual(log.splice(0), ['metrics started', 'other started', 'tracing in', 'handler', 'tracing out', 'metrics ended succeeded', 'other ended succeeded', 'tracing ended succeeded']);
});

test('an observer that throws, forgets to run the handler, runs it twice or late, or throws at the end never stops or repeats the job', async () => {
  for (const bad of [
    { attempt: () => { throw new Error('before run'); } },
    { attempt: (_j, run) => { run(); throw new Error('after run'); } },
    { attempt: () => undefined },
    { attempt: (_j, run) => (run(), run(), undefined) },
    { attempt: (_j, run) => void setImmediate(run) },
    { attempt: (_j, run) => (run(), { ended: () => { throw new Error('at the end'); } }) },
    { started: () => { throw new Error('at the start'); } },
    { started: () => ({ ended: () => { throw new Error('at the end'); } }) },
  ] satisfies WorkerObserver[]) {
    for (const list of [[bad], [bad, logging('other', [])], [logging('other', []), bad], [counting('other', []), bad]]) {
      let runs = 0;
      const errors: unknown[] = [];
      const o = combineObservers(list, (e) => errors.push(e));
      const seen = o?.launch(job, { start: () => void runs++ });
      if (seen) o?.ended(seen, { outcome: 'failed', durationMs: 1 });
      await new Promise((r) => setImmediate(r));
      assert.equal(runs, 1, 'the handler ran exactly once');
      const expected = (bad.attempt ?? bad.started).toString().includes('throw') ? 1 : 0;
      assert.equal(errors.length, expected, `errors reported: ${errors.map(String).join(', ')}`);
    }
  }
});

test('an observer without `started` or `attempt` is left out of attempts; a claim finds it again when it has one', () => {
  const log: string[] = [];
  const toggling: WorkerObserver = { claimed: () => void log.push('claimed') };
  const both = combineObservers([toggling, counting('metrics', log)], () => {});
  launch(both, log);
  assert.deepEqual(log.splice(0), ['metrics started', 'handler', 'metrics ended succeeded']);
  toggling.attempt = logging('tracing', log).attempt;
  launch(both, log);
  assert.deepEqual(log.splice(0), ['metrics started', 'handler', 'metrics ended succeeded'], 'not before the next claim');
  both?.claimed(1);
  launch(both, log);
  assert.deepEqual(log.splice(0), ['claimed', 'metrics started', 'tracing in', 'handler', 'tracing out', 'metrics ended succeeded', 'tracing ended succeeded']);
  delete toggling.attempt;
  both?.claimed(0);
  launch(both, log);
  assert.deepEqual(log.splice(0), ['claimed', 'metrics started', 'handler', 'metrics ended succeeded']);
});
