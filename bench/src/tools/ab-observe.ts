/**
 * What metrics and tracing cost a drain: the same build, drained bare (no observer, tracing
 * off) and observed (leasehold's Prometheus metrics with the registry scraped every second and
 * the database sampled at the minimum interval, plus an OpenTelemetry SDK registered: a
 * BasicTracerProvider with a batch processor into an exporter that drops what it is given
 * (BENCH_EXPORTER=memory: an in-memory one that keeps every span) and the
 * AsyncLocalStorage context manager, jobs enqueued under it so each attempt's span has its
 * link), alternated run by run so the machine's drift hits both alike:
 *   node --import tsx src/tools/ab-observe.ts sqlite 20000 10 6
 * Each run is a child process (this file with `--child bare|observed db n c`; PROFILE_OUT
 * profiles a child's drain). A fifth argument, `metrics`, `tracing`, `api-only` (leasehold's
 * spans on without an SDK, the default) or `sampled` (observed, the SDK keeping 1 trace in 100),
 * measures that against bare instead. Prints the
 * median (min–max) of jobs/s and of the worker's CPU per job for each, and observed ÷ bare.
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Db } from '../common.ts';
import { PG_URL, checkpointPostgres, sqliteDir } from '../common.ts';
import { profileSection } from './profiling.ts';

interface Run { jobsPerS: number; usPerJob: number; spans: number }

const args = process.argv.slice(2);
// tracing: the SDK registered, leasehold's spans on, no metrics; api-only: leasehold's spans on and no SDK (the default Worker)
// sampled: as observed, with the SDK keeping one trace in a hundred (ParentBased(TraceIdRatio 0.01))
type Mode = 'bare' | 'observed' | 'metrics' | 'tracing' | 'api-only' | 'sampled';
if (args[0] === '--child') await child(args[1] as Mode, args[2] as Db, Number(args[3]), Number(args[4]));
else parent(args);

function parent([db = 'sqlite', n = '20000', c = '10', reps = '6', other = 'observed']: string[]): void {
  // a fifth argument measures another mode against bare (see the header)
  const modes = ['bare', other as Mode] as const;
  const runs: Record<string, Run[]> = { [modes[0]]: [], [modes[1]]: [] };
  for (let r = 0; r < Number(reps); r++) {
    // alternate which goes first, so neither always runs on a warmer machine
    for (const mode of r % 2 === 0 ? modes : [...modes].reverse()) {
      const out = execFileSync(process.execPath, ['--import', 'tsx', fileURLToPath(import.meta.url), '--child', mode, db, n, c], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
      const line = out.trim().split('\n').find((l) => l.startsWith('{'));
      if (!line) throw new Error(`${mode}: no result line in\n${out}`);
      runs[mode]?.push(JSON.parse(line) as Run);
      console.error(`rep ${r + 1} ${mode}: ${line}`);
    }
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)] as number;
  const stats = (xs: number[]) => `${median(xs)} (${Math.min(...xs)}–${Math.max(...xs)})`;
  for (const mode of modes) {
    const rs = runs[mode] ?? [];
    console.log(`${db} ${mode}: jobs/s ${stats(rs.map((x) => x.jobsPerS))}; worker µs/job ${stats(rs.map((x) => x.usPerJob))}; spans ${median(rs.map((x) => x.spans))}`);
  }
  const ratio = (f: (x: Run) => number) => (median((runs[modes[1]] ?? []).map(f)) / median((runs.bare ?? []).map(f))).toFixed(3);
  console.log(`${db} ${modes[1]} ÷ bare: jobs/s ${ratio((x) => x.jobsPerS)}, worker CPU per job ${ratio((x) => x.usPerJob)}`);
}

async function child(mode: Mode, db: Db, n: number, c: number): Promise<void> {
  const sdk = mode === 'observed' || mode === 'tracing' || mode === 'sampled';
  const tracing = sdk || mode === 'api-only';
  const metered = mode === 'observed' || mode === 'metrics' || mode === 'sampled';
  process.env.LEASEHOLD_LOG_LEVEL ??= 'silent';
  let exported = 0;
  let flush = async () => {};
  let memoryCount = () => 0;
  if (sdk) {
    const { context, trace } = await import('@opentelemetry/api');
    const { AsyncLocalStorageContextManager } = await import('@opentelemetry/context-async-hooks');
    const { BasicTracerProvider, BatchSpanProcessor, InMemorySpanExporter, ParentBasedSampler, TraceIdRatioBasedSampler } = await import('@opentelemetry/sdk-trace-base');
    // BENCH_EXPORTER=memory keeps every span (the heap grows by one span per job); the default drops each batch once exported
    const memory = new InMemorySpanExporter();
    const exporter = process.env.BENCH_EXPORTER === 'memory' ? memory : { export: (spans: unknown[], done: (r: { code: number }) => void) => ((exported += spans.length), done({ code: 0 })), shutdown: async () => {} };
    const sampler = mode === 'sampled' ? { sampler: new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(0.01) }) } : {};
    const provider = new BasicTracerProvider({ ...sampler, spanProcessors: [new BatchSpanProcessor(exporter, { maxQueueSize: 4096, maxExportBatchSize: 512, scheduledDelayMillis: 500 })] });
    // BENCH_CONTEXT=none: no context manager (spans are made and exported; none is active in the handler)
    if (process.env.BENCH_CONTEXT !== 'none') context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    trace.setGlobalTracerProvider(provider);
    flush = () => provider.forceFlush();
    memoryCount = () => memory.getFinishedSpans().length;
  }
  const lh = (await import(process.env.BENCH_LEASEHOLD_SRC || '../../../dist/index.js')) as typeof import('../../../src/index.ts');
  const { findSystem } = await import('../systems/index.ts');
  const sys = findSystem(`leasehold-${db}`);
  await sys.reset();
  if (db === 'postgres') await checkpointPostgres();
  const producer = await sys.producer();
  const items = Array.from({ length: n }, (_, i) => ({ i }));
  for (let i = 0; i < n; i += 1000) await producer.enqueueBulk(items.slice(i, i + 1000));

  let done = 0;
  let resolve!: () => void;
  const all = new Promise<void>((r) => (resolve = r));
  const noop = lh.defineJob({ type: 'noop', maxAttempts: 5, handler: () => void (++done === n && resolve()) });
  const url = db === 'postgres' ? `${PG_URL}?schema=bench_leasehold` : db === 'mysql' ? `${process.env.BENCH_MYSQL_URL ?? 'mysql://root@127.0.0.1:3306'}/bench_leasehold` : `sqlite:${join(sqliteDir(), 'leasehold.db')}`;
  const storage = await lh.openStorage(url);
  const metrics = metered ? lh.createMetrics({ storage, sampling: { intervalMs: 5_000 } }) : undefined;
  // PROFILE_OUT=file.cpuprofile with --child: a CPU profile of the drain alone
  const stopProfile = await profileSection();
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const worker = new lh.Worker({ storage, jobs: [noop], concurrency: c, logger: lh.defaultLogger(), tracing, observers: metrics ? [metrics.observer] : [] });
  metrics?.track(worker);
  // Prometheus' scrapes, far more often than its usual 15 s
  const scraper = metrics && setInterval(() => void metrics.registry.metrics(), 1_000);
  await worker.start();
  await all;
  while ((await producer.remaining()) > 0) await new Promise((r) => setTimeout(r, 5));
  const wall = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  await stopProfile();
  clearInterval(scraper);
  await worker.stop({ deadlineMs: 5_000 });
  await flush();
  // the drains here end before the first scrape: this one takes the database sample, timed
  const s0 = performance.now();
  const text = metrics ? await metrics.registry.metrics() : '';
  const scrapeMs = Math.round((performance.now() - s0) * 10) / 10;
  if (metrics && !text.includes(`leasehold_attempts_total{type="noop",queue="default",outcome="succeeded"} ${n}`)) throw new Error('the metrics did not count every attempt');
  await metrics?.close();
  await storage.close();
  await producer.close();
  await sys.cleanup();
  const cpuUs = cpu.user + cpu.system;
  console.log(JSON.stringify({ mode, db, n, c, jobsPerS: Math.round(n / (wall / 1000)), usPerJob: Math.round((10 * cpuUs) / n) / 10, spans: exported + memoryCount(), ...(metrics ? { scrapeMs } : {}) }));
  process.exit(0);
}
