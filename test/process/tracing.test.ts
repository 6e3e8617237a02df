/**
 * Tracing across processes: one process enqueues inside a span of its own, another (with its
 * own tracer provider) runs the jobs; every attempt's consumer span links to the producer span
 * that enqueued its job, in the enqueuer's trace, and the handler's own spans are children of
 * the attempt's span. A failed attempt's span is marked as an error. Without a provider nothing
 * is stored with the job.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, describe, it } from 'node:test';
import { SpanKind } from '@opentelemetry/api';
import { Sandbox, dbTargets, killAll } from './support.js';

after(killAll);

const CHILD = path.join(path.dirname(fileURLToPath(import.meta.url)), 'fixtures/tracing-child.ts');

interface SpanLine {
  name: string;
  kind: SpanKind;
  traceId: string;
  spanId: string;
  parentSpanId: string | null;
  links: { traceId: string; spanId: string }[];
  attributes: Record<string, unknown>;
  error: boolean;
}

/** Runs the child to its exit and returns the spans it printed. */
function child(role: 'enqueue' | 'work', url: string): Promise<SpanLine[]> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, ['--import', 'tsx', CHILD, role, url], { env: { ...process.env, LEASEHOLD_LOG_LEVEL: 'silent' }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    p.stdout.on('data', (d: Buffer) => (out += d.toString()));
    p.stderr.on('data', (d: Buffer) => (err += d.toString()));
    p.on('error', reject);
    p.on('exit', (code) => (code === 0 ? resolve(out.split('\n').filter(Boolean).map((l) => JSON.parse(l) as SpanLine)) : reject(new Error(`${role} exited ${code}: ${err}`))));
  });
}

for (const target of await dbTargets('tracing')) {
  describe(`process: tracing (${target.kind})`, { skip: target.skip }, () => {
    it('each attempt span links to the span that enqueued its job, from another process', { timeout: 60_000 }, async () => {
      const sb = await Sandbox.create(target.kind, target.server);
      try {
        const sent = await child('enqueue', sb.url);
        const checkout = sent.find((s) => s.name === 'checkout');
        assert.ok(checkout, 'the enqueuer recorded its own span');
        const producers = sent.filter((s) => s.kind === SpanKind.PRODUCER);
        assert.equal(producers.length, 3, 'one producer span per enqueue call (the batch of two is one)');
        for (const p of producers) {
          assert.equal(p.traceId, checkout.traceId, 'the producer span is in the caller\'s trace');
          assert.equal(p.parentSpanId, checkout.spanId);
          assert.equal(p.attributes['messaging.system'], 'leasehold');
          assert.equal(p.attributes['messaging.operation.type'], 'send');
          assert.equal(p.attributes['messaging.destination.name'], 'default');
        }
        assert.equal(producers.filter((p) => p.attributes['messaging.batch.message_count'] === 2).length, 1);

        const jobs = await sb.storage.jobs.list({ limit: 10 });
        assert.equal(jobs.length, 4);
        for (const j of jobs) assert.match(j.traceContext ?? '', new RegExp(`^00-${checkout.traceId}-[0-9a-f]{16}-01$`), `job ${j.id} carries its producer's traceparent`);

        const ran = await child('work', sb.url);
        const consumers = ran.filter((s) => s.kind === SpanKind.CONSUMER);
        assert.equal(consumers.length, 4, 'one consumer span per attempt');
        for (const c of consumers) {
          const job = jobs.find((j) => j.id === c.attributes['messaging.message.id']);
          assert.ok(job, `consumer span of job ${String(c.attributes['messaging.message.id'])}`);
          assert.equal(c.parentSpanId, null, 'each attempt is a trace root of its own, never a child of the attempt before it');
          assert.equal(c.links.length, 1);
          const link = c.links[0];
          const producer = producers.find((p) => p.spanId === link?.spanId);
          assert.ok(producer, 'linked to a producer span of the enqueuing process');
          assert.equal(link?.traceId, checkout.traceId);
          assert.equal(job.traceContext?.split('-')[2], producer.spanId);
          assert.equal(c.attributes['messaging.operation.type'], 'process');
          assert.equal(c.attributes['leasehold.job.type'], job.type);
          assert.equal(c.error, job.type === 'traced.fail', `span status of ${job.type}`);
        }
        const inside = ran.filter((s) => s.name === 'inside handler');
        assert.equal(inside.length, 3);
        for (const s of inside) assert.ok(consumers.some((c) => c.spanId === s.parentSpanId && c.traceId === s.traceId), "the handler's span is a child of its attempt's span");
      } finally {
        await killAll();
        await sb.close();
      }
    });
  });
}
