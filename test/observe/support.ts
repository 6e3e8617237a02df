/**
 * Helpers for the metrics tests: read one series out of Prometheus' text format, a storage
 * that counts the database sampler's calls, and the Grafana example's queries.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Storage } from '../../src/core/storage.js';
import { overriding } from '../runtime/support.js';

export interface Series {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** Every sample line of an exposition text. */
export function parseSeries(text: string): Series[] {
  const out: Series[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) throw new Error(`not a sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]!] = l[2]!;
    out.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return out;
}

/** The series of `name` whose labels include `labels`. */
export function seriesOf(text: string, name: string, labels: Record<string, string> = {}): Series[] {
  return parseSeries(text).filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
}

/** The one value of `name` with exactly these labels (le aside); undefined when absent. */
export function valueOf(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  const hits = seriesOf(text, name, labels).filter((s) => Object.keys(s.labels).length === Object.keys(labels).length);
  if (hits.length > 1) throw new Error(`${name} ${JSON.stringify(labels)} matches ${hits.length} series`);
  return hits[0]?.value;
}

export interface SamplingCalls {
  /** queues.summary calls (the bounded counts) */
  summaries: number;
  health: number;
  workers: number;
  /** lock acquire calls (the sampler's lock) */
  acquires: number;
}

/** `storage` whose queues.summary, queues.health, workers.list and locks.acquire calls are counted in `calls`. */
export function countingSamples(storage: Storage): { storage: Storage; calls: SamplingCalls } {
  const calls: SamplingCalls = { summaries: 0, health: 0, workers: 0, acquires: 0 };
  let s = overriding(storage, 'queues', 'summary', (f) => (p) => (calls.summaries++, f(p)));
  s = overriding(s, 'queues', 'health', (f) => () => (calls.health++, f()));
  s = overriding(s, 'workers', 'list', (f) => () => (calls.workers++, f()));
  s = overriding(s, 'locks', 'acquire', (f) => (p) => (calls.acquires++, f(p)));
  return { storage: s, calls };
}

/** Every PromQL expression of examples/grafana/leasehold.json, its variables filled in as Grafana would. */
export function dashboardQueries(): string[] {
  const file = path.join(path.dirname(fileURLToPath(import.meta.url)), '../../examples/grafana/leasehold.json');
  const dash = JSON.parse(readFileSync(file, 'utf8')) as { panels: { targets: { expr: string }[] }[] };
  return dash.panels.flatMap((p) => p.targets.map((t) => t.expr.replaceAll('$__rate_interval', '1m').replace(/\$(queue|type)\b/g, '.*')));
}
