/**
 * A job's history as an operator reads it: its attempts and the operator's changes in the order
 * they happened, with runs numbered. Attempt numbers start again at 1 after a retry; the
 * 'retried' event between the two runs is the marker, placed by the attempt it names
 * (detail.lastAttemptId), not by timestamps, which can tie at the database clock's precision.
 */
import type { AttemptRow } from './storage-jobs.js';
import type { JobEvent } from './storage-events.js';

export type HistoryEntry =
  | { kind: 'attempt'; run: number; attempt: AttemptRow }
  | { kind: 'event'; run: number; event: JobEvent };

/**
 * `attempts` as attempts.list returns them (in the order they ran), `events` as jobs.events
 * returns them (oldest first). Each event goes right after the attempt it names, or before
 * every attempt when it names none; an event naming an attempt not listed goes after the last
 * attempt that started before it. Run 1 is the first; each 'retried' event starts the next (and is its first entry).
 */
export function jobHistory(attempts: readonly AttemptRow[], events: readonly JobEvent[]): HistoryEntry[] {
  const position = new Map(attempts.map((a, i) => [a.id, i]));
  // the events that follow attempt i, under key i (-1: before the first attempt)
  const after = new Map<number, JobEvent[]>();
  for (const e of events) {
    const named = e.detail.lastAttemptId === null ? -1 : position.get(e.detail.lastAttemptId);
    const at = named ?? attempts.reduce((last, a, i) => (a.startedAt.getTime() <= e.at.getTime() ? i : last), -1);
    const list = after.get(at);
    if (list) list.push(e);
    else after.set(at, [e]);
  }
  const out: HistoryEntry[] = [];
  let run = 1;
  const flush = (i: number) => {
    for (const event of after.get(i) ?? []) {
      if (event.kind === 'retried') run += 1;
      out.push({ kind: 'event', run, event });
    }
  };
  flush(-1);
  attempts.forEach((attempt, i) => {
    out.push({ kind: 'attempt', run, attempt });
    flush(i);
  });
  return out;
}
