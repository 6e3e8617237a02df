/**
 * The table printed per database: each workload × peer with leasehold's figure, the peer's and
 * leasehold ÷ peer (median, with min–max over the repeats), then the spike row. A peer whose id
 * ends in -poll10 is compared with leasehold at a 10 ms poll, so like is set beside like.
 * leasehold on the node:sqlite driver (id ending -node) is set beside it as if it were a peer.
 */
import type { Db, SystemDef } from './common.ts';
import { fmt, stats } from './common.ts';
import type { Result } from './results.ts';
import { M, results } from './results.ts';
import { allSystems } from './systems/index.ts';

export interface TableOptions {
  /** --only: the peers measured (undefined: all) */
  only: string[] | undefined;
  spikeDue: number;
  spikeFinished: number;
}

export function table(db: Db, { only, spikeDue, spikeFinished }: TableOptions): string {
  const subject = (peer: SystemDef) => {
    const poll = peer.id.endsWith('-poll10') ? allSystems.find((s) => s.id === `leasehold-${db}-poll10`) : undefined;
    return poll ?? (allSystems.find((s) => s.id === `leasehold-${db}`) as SystemDef);
  };
  const get = (sys: string, metric: string) => results.get(`${db}|${sys}|${metric}`);
  const cell = (r: Result | undefined) => {
    if (!r) return '-';
    const s = stats(r.values);
    return s.n > 1 ? `${fmt(s.median)} (${fmt(s.min)}–${fmt(s.max)})` : fmt(s.median);
  };
  const lines = [
    `| workload | leasehold | vs | their figure | leasehold ÷ them |`,
    `|---|---:|---|---:|---:|`,
  ];
  const systems = allSystems.filter((s) => s.db === db && (s.kind !== 'leasehold' || s.id.endsWith('-node')) && (!only || only.includes(s.id)));
  for (const metric of [M.bulk, M.single, M.c10, M.c50, M.p2, M.p50, M.p95, M.p99]) {
    const unit = metric.startsWith('idle') ? 'ms, lower is better' : 'jobs/s';
    const before = lines.length;
    for (const peer of systems) {
      const lh = subject(peer);
      // enqueue paths: compare with the variant that timed them
      const theirs = get(peer.id, metric);
      const mine = get(lh.id, metric);
      if (!theirs || !mine) continue;
      const ratio = stats(mine.values).median / stats(theirs.values).median;
      const notes = theirs.notes.length ? ` *${theirs.notes.join('; ')}*` : '';
      const myNotes = mine.notes.length ? ` *${mine.notes.join('; ')}*` : '';
      // the raw loops' enqueue figures are plain INSERTs, whatever their claim batch
      const label = peer.kind === 'raw' && (metric === M.bulk || metric === M.single) ? (metric === M.bulk ? 'raw SQL, multi-row INSERT' : 'raw SQL, one-row INSERT') : peer.label;
      lines.push(`| ${metric} (${unit}) | ${cell(mine)}${lh.id.endsWith('poll10') ? ' (poll 10 ms)' : ''}${myNotes} | ${label} | ${cell(theirs)}${notes} | ${fmt(ratio)}× |`);
    }
    if (lines.length === before) {
      // no peer measured this on this database (e.g. latency on MySQL): show leasehold alone
      for (const lh of allSystems.filter((x) => x.db === db && x.kind === 'leasehold' && !x.id.endsWith('-node'))) {
        const mine = get(lh.id, metric);
        if (mine) lines.push(`| ${metric} (${unit}) | ${cell(mine)}${lh.id.endsWith('poll10') ? ' (poll 10 ms)' : ''} | (no peer runs here) | - | - |`);
      }
    }
  }
  const lh = allSystems.find((s) => s.id === `leasehold-${db}`) as SystemDef;
  const before = get(lh.id, M.spikeEmpty);
  const after = get(lh.id, M.spikeFull);
  if (before && after) {
    const notes = [...before.notes, ...after.notes];
    lines.push(
      `| drain ${spikeDue.toLocaleString('en-US')} due with ${spikeFinished.toLocaleString('en-US')} finished rows (jobs/s) | ${cell(after)} | leasehold, same ${spikeDue.toLocaleString('en-US')} due on an empty table | ${cell(before)}${notes.length ? ` *${[...new Set(notes)].join('; ')}*` : ''} | ${fmt(stats(after.values).median / stats(before.values).median)}× |`,
    );
  }
  return lines.join('\n');
}
