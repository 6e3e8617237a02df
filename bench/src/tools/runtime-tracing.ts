/**
 * What tracing adds to the worker runtime's own CPU per job, without a database's noise: the
 * drain of runtime-overhead.ts (claims and finishes that cost next to nothing) run bare
 * (`tracing: false`) and in other modes, each run a child process, alternated run by run:
 *   node --import tsx src/tools/runtime-tracing.ts [n] [concurrency] [reps] [modes] [linked]
 * Modes (comma-separated): `metrics` (leasehold's Prometheus metrics, joined to another mode
 * with `+`, e.g. `metrics+api`), `api` (leasehold's spans, no SDK registered), `sdk` (an SDK
 * recording every span: BasicTracerProvider, a BatchSpanProcessor into an exporter that drops
 * what it is given, the AsyncLocalStorage context manager), `sdk@R` (the same keeping a fraction
 * R of traces: ParentBased(TraceIdRatioBased(R))); a mode ending in `+build2` runs the build at
 * BENCH_LEASEHOLD_SRC2 instead (two builds alternated in one run). A fifth argument `linked` gives every
 * claimed job a stored traceparent, as jobs enqueued in a recorded trace carry.
 * BENCH_PROCESSOR=none registers no span processor (spans are made and recorded, then dropped
 * at end: what the batch processor's queue and export cost shows against it);
 * BENCH_CONTEXT=none registers no context manager (no span is active in a handler).
 * PROFILE_OUT / ALLOC_OUT with --child profile its drain (see profiling.ts); CALLGRIND=1 with
 * --child under `valgrind --tool=callgrind --instr-atstart=no` counts the drain's instructions
 * alone (deterministic where timings are not; divide "I refs" by n). Prints the
 * median (min–max) worker CPU per job per mode and its difference from bare.
 */
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { profileSection } from './profiling.ts';

type ClaimedJob = import('../../../src/core/storage.ts').ClaimedJob;
type Storage = import('../../../src/core/storage.ts').Storage;

const args = process.argv.slice(2);
if (args[0] === '--child') await child(args[1] as string, Number(args[2]), Number(args[3]), args[4] === 'linked');
else parent(args);

function parent([n = '200000', c = '10', reps = '5', others = 'api,sdk@0.01,sdk', linked = '']: string[]): void {
  const modes = ['bare', ...others.split(',')];
  const us: Record<string, number[]> = Object.fromEntries(modes.map((m) => [m, []]));
  for (let r = 0; r < Number(reps); r++) {
    for (const mode of modes.map((_, i) => modes[(i + r) % modes.length] as string)) {
      const out = execFileSync(process.execPath, ['--import', 'tsx', fileURLToPath(import.meta.url), '--child', mode, n, c, linked], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
      us[mode]?.push(Number(out.trim().split('\n').at(-1)));
    }
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)] as number;
  const bare = median(us.bare ?? []);
  for (const mode of modes) {
    const xs = us[mode] ?? [];
    console.log(`${mode.padEnd(10)} ${median(xs).toFixed(2)} (${Math.min(...xs).toFixed(2)}–${Math.max(...xs).toFixed(2)}) µs/job${mode === 'bare' ? '' : `, +${(median(xs) - bare).toFixed(2)} µs over bare`}${linked ? ', linked' : ''}`);
  }
}

async function child(modeArg: string, n: number, c: number, linked: boolean): Promise<void> {
  process.env.LEASEHOLD_LOG_LEVEL ??= 'silent';
  const parts = modeArg.replace(/\+build2$/, '').split('+');
  const metered = parts.includes('metrics');
  const mode = parts.filter((p) => p !== 'metrics').join('+') || 'bare';
  const build = (mode === modeArg ? process.env.BENCH_LEASEHOLD_SRC : process.env.BENCH_LEASEHOLD_SRC2) || '../../../dist/index.js';
  if (mode.startsWith('sdk')) {
    const { context, trace } = await import('@opentelemetry/api');
    const { AsyncLocalStorageContextManager } = await import('@opentelemetry/context-async-hooks');
    const { AlwaysOnSampler, BasicTracerProvider, BatchSpanProcessor, ParentBasedSampler, TraceIdRatioBasedSampler } = await import('@opentelemetry/sdk-trace-base');
    const ratio = mode.startsWith('sdk@') ? Number(mode.slice(4)) : 1;
    const exporter = { export: (_: unknown[], done: (r: { code: number }) => void) => done({ code: 0 }), shutdown: async () => {} };
    const sampler = new ParentBasedSampler({ root: ratio < 1 ? new TraceIdRatioBasedSampler(ratio) : new AlwaysOnSampler() });
    if (process.env.BENCH_CONTEXT !== 'none') context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    const spanProcessors = process.env.BENCH_PROCESSOR === 'none' ? [] : [new BatchSpanProcessor(exporter, { maxQueueSize: 4096, maxExportBatchSize: 512, scheduledDelayMillis: 500 })];
    trace.setGlobalTracerProvider(new BasicTracerProvider({ sampler, spanProcessors }));
  }
  const lh = (await import(build)) as typeof import('../../../src/index.ts');
  const { memoryStorage } = (await import(build.replace(/index\.(ts|js)$/, 'storage/memory/index.$1'))) as typeof import('../../../src/storage/memory/index.ts');
  const memory = memoryStorage();
  await memory.migrate();
  const noop = lh.defineJob({ type: 'noop', handler: () => {} });
  await lh.createClient({ storage: memory, jobs: [noop] }).enqueue('noop', { i: 0 });
  const [claimedRow] = await memory.leases.claim({ workerId: 'w', types: ['noop'], queues: null, limit: 1, leaseMs: 30_000 });
  if (!claimedRow) throw new Error('no template job');
  // the enqueue above may have stamped a traceparent (an SDK recorded it): every mode runs unlinked unless told
  const { traceContext: _stamped, ...unlinked } = claimedRow;
  const template: ClaimedJob = linked ? { ...unlinked, traceContext: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' } : unlinked;
  let claimed = 0;
  let finished = 0;
  let resolve!: () => void;
  const all = new Promise<void>((r) => (resolve = r));
  const leases: Storage['leases'] = {
    ...memory.leases,
    findExpired: (p) => memory.leases.findExpired(p),
    claim: async (p) => {
      const k = Math.min(p.limit, n - claimed);
      const lockedUntil = new Date(Date.now() + p.leaseMs);
      return Array.from({ length: k }, (): ClaimedJob => {
        const id = String(++claimed);
        return { ...template, id, leaseToken: `t.${id}`, lockedUntil, payload: { i: claimed } };
      });
    },
    finish: async ({ items }) => {
      finished += items.length;
      if (finished === n) setImmediate(resolve);
      return items.map((p) => ({ id: p.id, applied: true }));
    },
    heartbeat: async () => ({ lost: [] }),
  };
  const storage = new Proxy(memory, { get: (target, prop, receiver) => (prop === 'leases' ? leases : (Reflect.get(target, prop, receiver) as unknown)) }) as Storage;
  const stopProfile = await profileSection();
  const callgrind = (on: boolean) => process.env.CALLGRIND && execFileSync('callgrind_control', ['-i', on ? 'on' : 'off', String(process.pid)], { stdio: 'ignore' });
  callgrind(true);
  const cpu0 = process.cpuUsage();
  const metrics = metered ? lh.createMetrics({ storage, sampling: { intervalMs: 60_000 } }) : undefined;
  const w = new lh.Worker({ storage, jobs: [noop], concurrency: c, scheduler: false, sweeper: false, tracing: mode !== 'bare', observers: metrics ? [metrics.observer] : [] });
  metrics?.track(w);
  await w.start();
  await all;
  const cpu = process.cpuUsage(cpu0);
  callgrind(false);
  await stopProfile();
  await w.stop();
  console.log(((cpu.user + cpu.system) / n).toFixed(3));
  process.exit(0);
}
