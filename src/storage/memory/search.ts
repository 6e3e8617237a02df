/**
 * jobs.search and jobs.countMatching in memory: the reads of ../search-pages.ts over the job
 * table, with the matching rules of core/search.ts spelled in JavaScript. There is no planner,
 * so no estimate: a count past its cap is reported as the cap.
 */
import { foldAscii, type CheckedFilter, type NameMatch } from '../../core/search.js';
import { DUE_STATUSES, type JobStatus } from '../../core/status.js';
import type { JobCount, JobRow } from '../../core/storage.js';
import type { MatchReader, MatchScan } from '../search-pages.js';
import { jobOut, type MemoryDb, type StoredJob } from './db.js';

const matches = (m: NameMatch | null, v: string | null | undefined): boolean =>
  m === null || (v != null && (m.prefix ? v.startsWith(m.value) : v === m.value));

/** The filter's exact parts: everything but the text test. */
function exactMatch(f: CheckedFilter, j: StoredJob): boolean {
  return (
    (f.status === null || j.status === f.status) &&
    (f.id === null || j.id === f.id) &&
    matches(f.queue, j.queue) &&
    matches(f.type, j.type) &&
    matches(f.idempotencyKey, j.idempotencyKey) &&
    (f.scheduleName === null || j.scheduleName === f.scheduleName)
  );
}

const holds = (text: string, v: string | null | undefined): boolean => v != null && foldAscii(v).includes(text);

function textMatch(text: string | null, j: StoredJob): boolean {
  return text === null || holds(text, j.lastErrorCode) || holds(text, j.lastError) || holds(text, j.payloadJson);
}

export class MemoryMatchReader implements MatchReader {
  constructor(private readonly db: MemoryDb) {}

  /** Jobs matching the exact parts past the cursor, in the scan's order; with text, only the first scanLimit. */
  #candidates(s: MatchScan): StoredJob[] {
    this.db.now();
    const below = s.below === null ? Infinity : Number(s.below);
    const above = s.above === null ? -Infinity : Number(s.above);
    const out = [...this.db.jobs.values()].filter((j) => j.seq < below && j.seq > above && exactMatch(s.filter, j));
    out.sort((a, b) => (s.newestFirst ? b.seq - a.seq : a.seq - b.seq));
    return s.filter.text === null ? out : out.slice(0, s.scanLimit);
  }

  #matching(s: MatchScan): StoredJob[] {
    return this.#candidates(s).filter((j) => textMatch(s.filter.text, j)).slice(0, s.limit);
  }

  async rows(s: MatchScan): Promise<JobRow[]> {
    return this.#matching(s).map(jobOut);
  }

  async count(s: MatchScan): Promise<number> {
    return this.#matching(s).length;
  }

  async candidates(s: MatchScan): Promise<{ n: number; last: string | null }> {
    const c = this.#candidates(s);
    return { n: c.length, last: c[c.length - 1]?.id ?? null };
  }

  async estimate(): Promise<number | null> {
    return null;
  }

  async idRange(): Promise<{ min: bigint; max: bigint } | null> {
    this.db.now();
    const seqs = [...this.db.jobs.values()].map((j) => j.seq);
    return seqs.length ? { min: BigInt(Math.min(...seqs)), max: BigInt(Math.max(...seqs)) } : null;
  }

  async groups(statuses: readonly JobStatus[]): Promise<JobCount[]> {
    const nowMs = this.db.now().getTime();
    const out = new Map<string, JobCount>();
    for (const j of this.db.jobs.values()) {
      if (!statuses.includes(j.status)) continue;
      const k = JSON.stringify([j.queue, j.type, j.status]);
      let g = out.get(k);
      if (!g) out.set(k, (g = { queue: j.queue, type: j.type, status: j.status, count: 0, due: 0 }));
      g.count++;
      if (DUE_STATUSES.includes(j.status) && j.runAt.getTime() <= nowMs) g.due++;
    }
    return [...out.values()];
  }
}
