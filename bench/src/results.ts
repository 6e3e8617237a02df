/**
 * The measurements of a bench run: the metric names, every raw value recorded per database ×
 * system × metric (repeats append to the same entry), and the results/<timestamp>.json file
 * written at the end. targets.ts reads that file back, so its field names stay as they are.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Db, SystemDef } from './common.ts';
import { nowMs, stats } from './common.ts';

const here = dirname(fileURLToPath(import.meta.url));

/** The workloads' names, as they appear in the tables and the results file. */
export const M = {
  bulk: 'enqueue, bulk API (1,000/call)',
  single: 'enqueue, one job per call',
  c10: 'drain, 1 process c=10',
  c50: 'drain, 1 process c=50',
  p2: 'drain, 2 processes c=10',
  p50: 'idle latency p50',
  p95: 'idle latency p95',
  p99: 'idle latency p99',
  spikeEmpty: 'spike: drain 100k due, empty table',
  spikeFull: 'spike: drain 100k due + 1M finished rows',
};

export interface Result {
  db: Db;
  system: string;
  metric: string;
  unit: string;
  values: number[];
  notes: string[];
}
/** keyed `${db}|${system}|${metric}` */
export const results = new Map<string, Result>();
export function record(db: Db, system: string, metric: string, unit: string, value: number, note?: string): void {
  const key = `${db}|${system}|${metric}`;
  let r = results.get(key);
  if (!r) results.set(key, (r = { db, system, metric, unit, values: [], notes: [] }));
  r.values.push(value);
  if (note && !r.notes.includes(note)) r.notes.push(note);
}

/** Every result with its statistics (median, min, max, n): what the file and targets.ts use. */
export function summarize(): (Result & ReturnType<typeof stats>)[] {
  return [...results.values()].map((r) => ({ ...r, ...stats(r.values) }));
}

export interface RunInfo {
  /** the command-line arguments after `npm run bench --` */
  args: string[];
  started: Date;
  /** nowMs() when the run started */
  t0: number;
  quick: boolean;
  config: unknown;
  selected: SystemDef[];
  summary: ReturnType<typeof summarize>;
  /** the tables as printed */
  tables: string[];
}

/** Write bench/results/<start time>[-quick].json; returns its path. */
export function writeResultsFile(run: RunInfo): string {
  const resDir = join(here, '..', 'results');
  mkdirSync(resDir, { recursive: true });
  const file = join(resDir, `${run.started.toISOString().replace(/[:.]/g, '-')}${run.quick ? '-quick' : ''}.json`);
  writeFileSync(
    file,
    JSON.stringify(
      {
        command: `npm run bench -- ${run.args.join(' ')}`,
        date: run.started.toISOString(),
        durationS: Math.round((nowMs() - run.t0) / 1000),
        node: process.version,
        cpus: os.cpus().length,
        cpuModel: os.cpus()[0]?.model,
        loadavgAtEnd: os.loadavg(),
        config: run.config,
        systems: run.selected.map(({ id, db, label, settings, kind }) => ({ id, db, label, settings, kind })),
        results: run.summary,
        tables: run.tables,
      },
      null,
      2,
    ),
  );
  return file;
}
