/**
 * Tracing with no tracer provider registered costs nothing visible: no traceparent is stored
 * with a job, and handlers run as usual. A stored traceparent is parsed strictly: anything but
 * a valid W3C version-00 value is ignored rather than linked. A provider registered while a
 * worker runs is found at its next claim.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { trace } from '@opentelemetry/api';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { createClient } from '../../src/runtime/client.js';
import { defineJob } from '../../src/runtime/job-definition.js';
import { fromTraceparent, toTraceparent } from '../../src/runtime/tracing.js';
import { Worker } from '../../src/runtime/worker.js';
import { memoryStorage } from '../../src/storage/memory/index.js';
import { LogCapture, waitFor } from './support.js';

test('without a tracer provider nothing is stored and jobs run', async () => {
  const storage = memoryStorage();
  await storage.migrate();
  let ran = 0;
  const jobs = [defineJob({ type: 't', handler: async () => void ran++ })];
  const client = createClient({ storage, jobs });
  const job = await client.enqueue('t', {});
  assert.equal(job.traceContext, undefined);
  assert.equal((await storage.jobs.get({ id: job.id }))?.traceContext, undefined);
  const report = await new Worker({ storage, jobs, sweeper: false, scheduler: false, logger: new LogCapture().logger }).drain({ maxMs: 10_000 });
  assert.equal(report.outcomes.succeeded, 1);
  assert.equal(ran, 1);
});

test('traceparent: round trip, and malformed or all-zero values are ignored', () => {
  const sc = { traceId: '0af7651916cd43dd8448eb211c80319c', spanId: 'b7ad6b7169203331', traceFlags: 1 };
  const tp = toTraceparent(sc);
  assert.equal(tp, '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01');
  assert.deepEqual(fromTraceparent(tp), { ...sc, isRemote: true });
  for (const bad of [undefined, '', 'junk', '01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01', '00-00000000000000000000000000000000-b7ad6b7169203331-01', '00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01', '00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01']) {
    assert.equal(fromTraceparent(bad), undefined, String(bad));
  }
});

// last in this file: it registers a provider for the rest of the process
test('a provider registered after the worker started gets the spans of the attempts claimed after it', async () => {
  const storage = memoryStorage();
  await storage.migrate();
  const jobs = [defineJob({ type: 't', handler: async () => {} })];
  const client = createClient({ storage, jobs });
  const worker = new Worker({ storage, jobs, sweeper: false, scheduler: false, pollIntervalMs: 20, logger: new LogCapture().logger });
  await client.enqueue('t', { before: true });
  await worker.start();
  try {
    while ((await storage.jobs.list({ status: 'succeeded', limit: 10 })).length < 1) await new Promise((r) => setTimeout(r, 10));
    const exporter = new InMemorySpanExporter();
    trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }));
    const job = await client.enqueue('t', { before: false });
    while ((await storage.jobs.list({ status: 'succeeded', limit: 10 })).length < 2) await new Promise((r) => setTimeout(r, 10));
    // the attempt's span ends once its finish returned, a moment after the row reads succeeded
    const consumers = await waitFor(() => {
      const ended = exporter.getFinishedSpans().filter((s) => s.name === 'process default');
      return ended.length > 0 ? ended : null;
    }, 5_000, 'the consumer span ended');
    assert.deepEqual(consumers.map((s) => s.attributes['messaging.message.id']), [job.id]);
  } finally {
    await worker.stop();
    trace.disable();
  }
});
