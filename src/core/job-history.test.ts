import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { jobHistory } from './job-history.js';
import type { AttemptRow } from './storage-jobs.js';
import type { JobEvent } from './storage-events.js';

const T = Date.UTC(2030, 0, 1);

function attempt(id: string, n: number, at: number): AttemptRow {
  return {
    id, jobId: '1', attempt: n, workerId: 'w', leaseToken: `t${id}`, startedAt: new Date(at), finishedAt: new Date(at), durationMs: 0,
    outcome: 'failed', errorCode: null, errorMessage: null, errorStack: null, retryDelayMs: null, waitMs: 0,
  };
}

function event(id: string, kind: JobEvent['kind'], lastAttemptId: string | null, at: number): JobEvent {
  return { id, jobId: '1', at: new Date(at), kind, actor: 'a', source: null, detail: { status: 'dead', attempts: 2, lastAttemptId } };
}

const show = (h: ReturnType<typeof jobHistory>): string[] => h.map((x) => (x.kind === 'attempt' ? `${x.run}:a${x.attempt.id}` : `${x.run}:${x.event.kind}`));

describe('jobHistory', () => {
  it('places each event after the attempt it names, even when every time is equal; a retry starts the next run', () => {
    const attempts = [attempt('10', 1, T), attempt('11', 2, T), attempt('12', 1, T), attempt('13', 1, T)];
    const events = [event('1', 'retried', '11', T), event('2', 'cancelled', '12', T), event('3', 'retried', '12', T)];
    assert.deepEqual(show(jobHistory(attempts, events)), ['1:a10', '1:a11', '2:retried', '2:a12', '2:cancelled', '3:retried', '3:a13']);
  });

  it('an event naming no attempt comes first; one naming an attempt not listed goes after the last attempt started by its time', () => {
    const attempts = [attempt('10', 1, T), attempt('11', 1, T + 100)];
    assert.deepEqual(show(jobHistory(attempts, [event('1', 'cancelled', null, T + 500), event('2', 'retried', '99', T + 50)])), ['1:cancelled', '1:a10', '2:retried', '2:a11']);
    assert.deepEqual(show(jobHistory([], [event('1', 'retried', null, T)])), ['2:retried']);
  });
});
