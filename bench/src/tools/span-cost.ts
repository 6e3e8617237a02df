/**
 * What one span costs, split between the OpenTelemetry SDK and leasehold's instrumentation, in
 * loops with nothing else in them (no database, no worker): the SDK's bare startSpan/end, the
 * same with a link, with the span made active around a call (context.with, the
 * AsyncLocalStorage context manager), and leasehold's own attempt observer and enqueue span
 * (from a build: BENCH_LEASEHOLD_SRC, as ab-observe.ts):
 *   node --import tsx src/tools/span-cost.ts <none|api|0.01|0.1|all> [iterations] [rounds]
 * `none` registers nothing (the API's no-op tracer: leasehold's default with no SDK); `api` is
 * the same; a number registers the SDK with ParentBased(TraceIdRatioBased(number)); `all`
 * records every span. The exporter drops what a BatchSpanProcessor hands it. Prints the median
 * (min–max) of this process's CPU time per operation (user + system, so other processes on a
 * busy machine count less than in wall time) over the rounds, each running every case in turn.
 */
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ROOT_CONTEXT, SpanKind, context, trace } from '@opentelemetry/api';

const [mode = '0.01', itArg = '200000', roundArg = '7'] = process.argv.slice(2);
const iterations = Number(itArg);
const rounds = Number(roundArg);

if (mode !== 'none' && mode !== 'api') {
  const { AsyncLocalStorageContextManager } = await import('@opentelemetry/context-async-hooks');
  const { AlwaysOnSampler, BasicTracerProvider, BatchSpanProcessor, ParentBasedSampler, TraceIdRatioBasedSampler } = await import('@opentelemetry/sdk-trace-base');
  const exporter = { export: (_: unknown[], done: (r: { code: number }) => void) => done({ code: 0 }), shutdown: async () => {} };
  const sampler = new ParentBasedSampler({ root: mode === 'all' ? new AlwaysOnSampler() : new TraceIdRatioBasedSampler(Number(mode)) });
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  trace.setGlobalTracerProvider(new BasicTracerProvider({ sampler, spanProcessors: [new BatchSpanProcessor(exporter, { maxQueueSize: 4096, maxExportBatchSize: 512, scheduledDelayMillis: 500 })] }));
}

const dist = dirname(process.env.BENCH_LEASEHOLD_SRC || join(import.meta.dirname, '../../../dist/index.js'));
const lh = (await import(pathToFileURL(join(dist, 'runtime/tracing.js')).href)) as typeof import('../../../src/runtime/tracing.ts');
const observer = lh.tracingObserver();
const t = trace.getTracer('bench');
const linkTp = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
const link = { context: { traceId: '0af7651916cd43dd8448eb211c80319c', spanId: 'b7ad6b7169203331', traceFlags: 1, isRemote: true } };
let sink = 0;
const run = () => void sink++;
/** what the worker does when no observer wraps the attempt */
const direct = (_job: unknown, r: () => void): undefined => void r();
const job = (traceContext?: string) => ({ id: '123', type: 'noop', queue: 'default', attempts: 1, ...(traceContext ? { traceContext } : {}) }) as never;
const plain = job();
const linked = job(linkTp);
const startAttributes = { 'messaging.system': 'leasehold', 'messaging.operation.type': 'process', 'messaging.operation.name': 'process', 'messaging.destination.name': 'default' };
const end = { outcome: 'succeeded', durationMs: 1 };

const cases: Record<string, () => void> = {
  'a call (the loop itself)': () => run(),
  'SDK startSpan + end': () => t.startSpan('process default', { kind: SpanKind.CONSUMER }, ROOT_CONTEXT).end(),
  'SDK startSpan with 4 attributes + end': () => t.startSpan('process default', { kind: SpanKind.CONSUMER, attributes: startAttributes }, ROOT_CONTEXT).end(),
  'SDK startSpan with a link + end': () => t.startSpan('process default', { kind: SpanKind.CONSUMER, links: [link] }, ROOT_CONTEXT).end(),
  'SDK startSpan + context.with + end': () => {
    const span = t.startSpan('process default', { kind: SpanKind.CONSUMER }, ROOT_CONTEXT);
    context.with(trace.setSpan(ROOT_CONTEXT, span), run);
    span.end();
  },
  // what leasehold's attempt asks of the API and SDK, written inline: the difference is leasehold's own code
  'the same calls inline, no link': () => {
    const span = t.startSpan('process default', { kind: SpanKind.CONSUMER, attributes: startAttributes }, ROOT_CONTEXT);
    context.with(trace.setSpan(ROOT_CONTEXT, span), run);
    if (span.isRecording()) {
      span.setAttribute('messaging.message.id', '123').setAttribute('leasehold.job.type', 'noop').setAttribute('leasehold.job.attempt', 1);
      span.setAttribute('leasehold.attempt.outcome', 'succeeded');
    }
    span.end();
  },
  // with no provider the observer has no `attempt` (the worker then runs the job itself): timed as that
  'leasehold attempt, no link': () => (observer.attempt ?? direct)(plain, run)?.ended(end),
  'leasehold attempt, linked': () => (observer.attempt ?? direct)(linked, run)?.ended(end),
  'SDK producer startSpan + end': () => t.startSpan('send default', { kind: SpanKind.PRODUCER }).end(),
  'leasehold send, one row': () => lh.startSend([{ type: 'noop', queue: 'default' } as never])?.written(['1']),
};

// BENCH_CASE=text runs only the cases whose name has it (to profile one: node --cpu-prof …)
const chosen = Object.entries(cases).filter(([name]) => name.includes(process.env.BENCH_CASE ?? ''));
const ns: Record<string, number[]> = {};
for (let r = 0; r < rounds; r++) {
  for (const [name, f] of chosen) {
    const cpu0 = process.cpuUsage();
    for (let i = 0; i < iterations; i++) f();
    const cpu = process.cpuUsage(cpu0);
    (ns[name] ??= []).push(((cpu.user + cpu.system) * 1000) / iterations);
  }
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)] as number;
console.log(`sampler ${mode}, ${iterations} per case, ${rounds} rounds: CPU ns per operation, median (min–max)`);
for (const [name, xs] of Object.entries(ns)) console.log(`${name.padEnd(40)} ${median(xs).toFixed(0).padStart(6)} (${Math.min(...xs).toFixed(0)}–${Math.max(...xs).toFixed(0)})`);
if (sink < 0) console.log(sink);
