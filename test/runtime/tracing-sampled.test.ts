/**
 * Tracing under a sampler, as production runs it: samplers see the messaging attributes they
 * may decide on when a span starts, and an attempt whose span is sampled out still runs its
 * handler inside that span's context, so the handler's own spans follow its decision (a
 * parent-based sampler drops them) instead of starting traces of their own or joining another
 * attempt's trace. The jobs of one enqueue call, linked to it, each get that link.
 */
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { type Attributes, type Context, type Link, SamplingDecision, type Sampler, SpanKind, context, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { BasicTracerProvider, InMemorySpanExporter, ParentBasedSampler, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { createClient } from '../../src/runtime/client.js';
import { defineJob } from '../../src/runtime/job-definition.js';
import { Worker } from '../../src/runtime/worker.js';
import { memoryStorage } from '../../src/storage/memory/index.js';
import { LogCapture } from './support.js';

/** Keeps every root span but the consumer spans it is told to drop; remembers what each start showed it. */
class ChoosySampler implements Sampler {
  readonly seen: { name: string; kind: SpanKind; attributes: Attributes; links: Link[] }[] = [];
  consumersKept = 0;
  constructor(private readonly keepConsumers: number) {}
  shouldSample(_ctx: Context, _traceId: string, name: string, kind: SpanKind, attributes: Attributes, links: Link[]) {
    this.seen.push({ name, kind, attributes: { ...attributes }, links });
    if (kind !== SpanKind.CONSUMER) return { decision: SamplingDecision.RECORD_AND_SAMPLED };
    return { decision: this.consumersKept++ < this.keepConsumers ? SamplingDecision.RECORD_AND_SAMPLED : SamplingDecision.NOT_RECORD };
  }
}

const exporter = new InMemorySpanExporter();
const sampler = new ChoosySampler(1);
const contextManager = new AsyncLocalStorageContextManager().enable();
context.setGlobalContextManager(contextManager);
const provider = new BasicTracerProvider({ sampler: new ParentBasedSampler({ root: sampler }), spanProcessors: [new SimpleSpanProcessor(exporter)] });
trace.setGlobalTracerProvider(provider);
after(async () => {
  await provider.shutdown();
  trace.disable();
  context.disable();
});

test('a sampled-out attempt keeps its handler\'s spans out of every trace; samplers see the messaging attributes at start', async () => {
  const storage = memoryStorage();
  await storage.migrate();
  const tracer = trace.getTracer('test');
  const jobs = [defineJob({ type: 't', handler: async () => tracer.startActiveSpan('inside handler', (s) => s.end()) })];
  const client = createClient({ storage, jobs });
  await client.enqueueMany([{ type: 't', payload: { n: 1 } }, { type: 't', payload: { n: 2 } }, { type: 't', payload: { n: 3 } }]);
  const report = await new Worker({ storage, jobs, concurrency: 1, sweeper: false, scheduler: false, logger: new LogCapture().logger }).drain({ maxMs: 10_000 });
  assert.equal(report.outcomes.succeeded, 3);

  const spans = exporter.getFinishedSpans();
  const producer = spans.find((s) => s.kind === SpanKind.PRODUCER);
  assert.ok(producer, 'the enqueue call\'s span was kept');
  const consumers = spans.filter((s) => s.kind === SpanKind.CONSUMER);
  assert.equal(consumers.length, 1, 'the one attempt the sampler kept');
  const inside = spans.filter((s) => s.name === 'inside handler');
  assert.equal(inside.length, 1, 'only the kept attempt\'s handler span: the others had a sampled-out parent');
  assert.equal(inside[0]?.parentSpanContext?.spanId, consumers[0]?.spanContext().spanId, 'a child of its own attempt\'s span');

  const started = sampler.seen.filter((s) => s.kind === SpanKind.CONSUMER);
  assert.equal(started.length, 3, 'one consumer span started per attempt');
  for (const s of started) {
    assert.equal(s.name, 'process default');
    assert.deepEqual(s.attributes, { 'messaging.system': 'leasehold', 'messaging.operation.type': 'process', 'messaging.operation.name': 'process', 'messaging.destination.name': 'default' });
    assert.deepEqual(s.links.map((l) => l.context.spanId), [producer.spanContext().spanId], 'each job of the enqueue call links to it');
  }
  const send = sampler.seen.find((s) => s.kind === SpanKind.PRODUCER);
  assert.deepEqual(send?.attributes, { 'messaging.system': 'leasehold', 'messaging.operation.type': 'send', 'messaging.operation.name': 'send', 'messaging.destination.name': 'default' });
  assert.equal(consumers[0]?.attributes['leasehold.job.type'], 't', 'a kept span gets the rest');
  assert.equal(producer.attributes['messaging.batch.message_count'], 3);
});

test('the context a handler runs in behaves as the API\'s: values set on it keep the attempt\'s span, deleting the span removes it', async () => {
  const storage = memoryStorage();
  await storage.migrate();
  const key = Symbol('app value');
  const seen: { active: boolean; kept: boolean; value: unknown; deleted: boolean }[] = [];
  const jobs = [
    defineJob({
      type: 'ctx',
      handler: async () => {
        const active = context.active();
        const span = trace.getSpan(active);
        const withValue = active.setValue(key, 42);
        seen.push({ active: span !== undefined, kept: trace.getSpan(withValue) === span, value: withValue.getValue(key), deleted: trace.getSpan(trace.deleteSpan(active)) === undefined });
        await context.with(withValue, async () => void assert.equal(context.active().getValue(key), 42));
      },
    }),
  ];
  await createClient({ storage, jobs }).enqueue('ctx', {});
  const report = await new Worker({ storage, jobs, concurrency: 1, sweeper: false, scheduler: false, logger: new LogCapture().logger }).drain({ maxMs: 10_000 });
  assert.equal(report.outcomes.succeeded, 1);
  assert.deepEqual(seen, [{ active: true, kept: true, value: 42, deleted: true }]);
});
