/**
 * What metrics and tracing cost a drain: the same build, drained bare (no observer, tracing
 * off) and in other modes, alternated run by run so the machine's drift hits all alike:
 *   node --import tsx src/tools/ab-observe.ts sqlite 20000 10 6 [modes]
 * A mode joins parts with `+`: `metrics` (leasehold's Prometheus metrics, the registry scraped
 * every second, the database sampled at the minimum interval, 5 s; `metrics@MS` samples at most
 * every MS ms, e.g. `metrics@15000` the default; `metrics@off` never samples the database), `api` (leasehold's spans on with
 * no SDK registered: the default Worker), `sdk` (an OpenTelemetry SDK registered and recording
 * every span: a BasicTracerProvider with a batch processor into an exporter that drops what it
 * is given, or with BENCH_EXPORTER=memory an in-memory one that keeps every span, and the
 * AsyncLocalStorage context manager; jobs are enqueued under it, so each recorded enqueue's
 * jobs carry its traceparent) or `sdk@R` (the same SDK keeping a fraction R of traces:
 * ParentBased(TraceIdRatioBased(R))); `nospans` turns leasehold's spans off with an SDK
 * registered (what registering the SDK costs by itself); `build2` runs the build at
 * BENCH_LEASEHOLD_SRC2 instead (two builds side by side). Older names: `tracing` = sdk, `api-only` = api,
 * `observed` = metrics+sdk, `sampled` = metrics+sdk@0.01 (the default). Several modes,
 * comma-separated, run side by side with bare in the same run. Each run is a child process
 * (this file with `--child mode db n c`; PROFILE_OUT profiles a child's drain; BENCH_WORK_US=N
 * makes every job spin N µs of CPU, as jobs doing real work would) on a database,
 * schema or file of its own. Prints the
 * median (min–max) of jobs/s and of the worker's CPU per job for each mode, and mode ÷ bare.
 */
import { execFileSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Db } from '../common.ts';
import { MYSQL_URL, PG_URL, checkpointPostgres, sqliteDir } from '../common.ts';
import { profileSection } from './profiling.ts';

interface Run { jobsPerS: number; usPerJob: number; spans: number }

const args = process.argv.slice(2);
const ALIASES: Record<string, string> = { tracing: 'sdk', 'api-only': 'api', observed: 'metrics+sdk', sampled: 'metrics+sdk@0.01' };
/** What a mode turns on: metrics, leasehold's spans, an SDK and the fraction of traces it keeps. */
interface Setup { metrics: boolean; sampleMs: number | false; spans: boolean; sdk: boolean; ratio: number; build: string }
function setup(mode: string): Setup {
  const parts = (ALIASES[mode] ?? mode).split('+');
  const sdk = parts.find((p) => p === 'sdk' || p.startsWith('sdk@'));
  const metered = parts.find((p) => p === 'metrics' || p.startsWith('metrics@'));
  for (const p of parts) if (p !== 'bare' && p !== metered && p !== 'api' && p !== 'nospans' && p !== 'build2' && p !== sdk) throw new Error(`unknown mode part ${p} in ${mode}`);
  const sampleMs = metered?.startsWith('metrics@') ? (metered === 'metrics@off' ? false : Number(metered.slice(8))) : 5_000;
  return { metrics: metered !== undefined, sampleMs, spans: (parts.includes('api') || sdk !== undefined) && !parts.includes('nospans'), sdk: sdk !== undefined, ratio: sdk?.startsWith('sdk@') ? Number(sdk.slice(4)) : 1, build: (parts.includes('build2') ? process.env.BENCH_LEASEHOLD_SRC2 : process.env.BENCH_LEASEHOLD_SRC) || '../../../dist/index.js' };
}
if (args[0] === '--child') await child(args[1] as string, args[2] as Db, Number(args[3]), Number(args[4]));
else parent(args);

function parent([db = 'sqlite', n = '20000', c = '10', reps = '6', others = 'sampled']: string[]): void {
  // the fifth argument: the modes measured against bare (see the header)
  const modes = ['bare', ...others.split(',')];
  for (const m of modes) setup(m);
  const runs: Record<string, Run[]> = Object.fromEntries(modes.map((m) => [m, []]));
  for (let r = 0; r < Number(reps); r++) {
    // rotate which goes first, so none always runs on a warmer machine
    for (const mode of modes.map((_, i) => modes[(i + r) % modes.length] as string)) {
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
  const ratio = (mode: string, f: (x: Run) => number) => (median((runs[mode] ?? []).map(f)) / median((runs.bare ?? []).map(f))).toFixed(3);
  for (const mode of modes.slice(1)) console.log(`${db} ${mode} ÷ bare: jobs/s ${ratio(mode, (x) => x.jobsPerS)}, worker CPU per job ${ratio(mode, (x) => x.usPerJob)}`);
}

async function child(mode: string, db: Db, n: number, c: number): Promise<void> {
  const { metrics: metered, sampleMs, spans: tracing, sdk, ratio, build } = setup(mode);
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
    const sampler = ratio < 1 ? { sampler: new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(ratio) }) } : {};
    const provider = new BasicTracerProvider({ ...sampler, spanProcessors: [new BatchSpanProcessor(exporter, { maxQueueSize: 4096, maxExportBatchSize: 512, scheduledDelayMillis: 500 })] });
    // BENCH_CONTEXT=none: no context manager (spans are made and exported; none is active in the handler)
    if (process.env.BENCH_CONTEXT !== 'none') context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    trace.setGlobalTracerProvider(provider);
    flush = () => provider.forceFlush();
    memoryCount = () => memory.getFinishedSpans().length;
  }
  const lh = (await import(build)) as typeof import('../../../src/index.ts');
  const own = await ownDatabase(db);
  const setupStorage = await lh.openStorage(own.url);
  await setupStorage.migrate();
  await setupStorage.close();
  if (db === 'postgres') await checkpointPostgres();
  // the producer has a storage of its own, as an app's web process would
  const producerStorage = await lh.openStorage(own.url);
  const producer = lh.createClient({ storage: producerStorage, jobs: [lh.defineJob({ type: 'noop', handler: () => {} })] });
  const items = Array.from({ length: n }, (_, i) => ({ type: 'noop' as const, payload: { i } }));
  for (let i = 0; i < n; i += 1000) await producer.enqueueMany(items.slice(i, i + 1000));

  let done = 0;
  let resolve!: () => void;
  const all = new Promise<void>((r) => (resolve = r));
  // BENCH_WORK_US: each job spins this long on the CPU first, as a job that does real work would
  const workUs = Number(process.env.BENCH_WORK_US ?? 0);
  const spin = () => {
    for (const until = performance.now() + workUs / 1000; performance.now() < until; );
  };
  const noop = lh.defineJob({ type: 'noop', maxAttempts: 5, handler: () => void (workUs > 0 && spin(), ++done === n && resolve()) });
  const storage = await lh.openStorage(own.url);
  const metrics = metered ? lh.createMetrics({ storage, sampling: sampleMs === false ? false : { intervalMs: sampleMs } }) : undefined;
  // PROFILE_OUT=file.cpuprofile with --child: a CPU profile of the drain alone
  const stopProfile = await profileSection();
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const worker = new lh.Worker({ storage, jobs: [noop], concurrency: c, tracing, observers: metrics ? [metrics.observer] : [] });
  metrics?.track(worker);
  // Prometheus' scrapes, far more often than its usual 15 s
  const scraper = metrics && setInterval(() => void metrics.registry.metrics(), 1_000);
  await worker.start();
  await all;
  while ((await own.unfinished()) > 0) await new Promise((r) => setTimeout(r, 5));
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
  if (metrics && !text.includes(`leasehold_attempts_total{type="noop",queue="default",outcome="succeeded"} ${n}`)) throw new Error(`the metrics did not count every attempt:\n${text.split('\n').filter((l) => l.startsWith('leasehold_attempts_total')).join('\n')}`);
  await metrics?.close();
  await storage.close();
  await producerStorage.close();
  await own.drop();
  const cpuUs = cpu.user + cpu.system;
  // jobs per claim: a slower runtime claims smaller batches, and every statement costs the database and the driver
  const claims = Number(/^leasehold_claim_batch_size_count(?:\{[^}]*\})? (\d+)/m.exec(text)?.[1] ?? Number.NaN);
  console.log(JSON.stringify({ mode, db, n, c, jobsPerS: Math.round(n / (wall / 1000)), usPerJob: Math.round((10 * cpuUs) / n) / 10, spans: exported + memoryCount(), ...(metrics ? { scrapeMs, jobsPerClaim: Math.round((10 * n) / claims) / 10 } : {}) }));
  process.exit(0);
}

/**
 * A database (schema, file) of this run's own, so another tool using the harness's shared
 * names at the same time cannot drop it mid-drain, and a count of its unfinished jobs.
 */
async function ownDatabase(db: Db): Promise<{ url: string; unfinished: () => Promise<number>; drop: () => Promise<void> }> {
  const name = `bench_observe_${process.pid}`;
  const unfinishedWhere = `status IN ('queued', 'failed', 'running')`;
  if (db === 'postgres') {
    const { default: pg } = await import('pg');
    const c = new pg.Client({ connectionString: PG_URL });
    await c.connect();
    await c.query(`DROP SCHEMA IF EXISTS ${name} CASCADE`);
    return {
      url: `${PG_URL}?schema=${name}`,
      unfinished: async () => Number((await c.query<{ n: string }>(`SELECT count(*) AS n FROM ${name}.jobs WHERE ${unfinishedWhere}`)).rows[0]?.n),
      drop: async () => void (await c.query(`DROP SCHEMA IF EXISTS ${name} CASCADE`), await c.end()),
    };
  }
  if (db === 'mysql') {
    const { default: mysql } = await import('mysql2/promise');
    const c = await mysql.createConnection({ uri: MYSQL_URL });
    await c.query(`DROP DATABASE IF EXISTS ${name}`);
    await c.query(`CREATE DATABASE ${name}`);
    return {
      url: `${MYSQL_URL}/${name}`,
      unfinished: async () => Number(((await c.query(`SELECT count(*) AS n FROM ${name}.leasehold_jobs WHERE ${unfinishedWhere}`))[0] as { n: number }[])[0]?.n),
      drop: async () => void (await c.query(`DROP DATABASE IF EXISTS ${name}`), await c.end()),
    };
  }
  const file = join(sqliteDir(), `${name}.db`);
  const { default: Database } = await import('better-sqlite3');
  let reader: InstanceType<typeof Database> | undefined;
  return {
    url: `sqlite:${file}`,
    unfinished: async () => Number(((reader ??= new Database(file, { readonly: true })).prepare(`SELECT count(*) AS n FROM leasehold_jobs WHERE ${unfinishedWhere}`).get() as { n: number }).n),
    drop: async () => {
      reader?.close();
      for (const f of [file, `${file}-wal`, `${file}-shm`]) rmSync(f, { force: true });
    },
  };
}
