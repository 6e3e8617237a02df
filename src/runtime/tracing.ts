/**
 * Tracing through @opentelemetry/api only: a producer span per enqueue call whose context is
 * stored with each job (a W3C traceparent), and a consumer span per attempt linked to it, so an
 * attempt hours later in another process is found from the trace that enqueued it. Spans follow
 * the messaging semantic conventions. Without a registered tracer provider every span is a
 * non-recording no-op: nothing is stored and the handler runs in the caller's context unchanged.
 */
import { ROOT_CONTEXT, type Span, SpanKind, SpanStatusCode, type Tracer, context, isSpanContextValid, trace } from '@opentelemetry/api';
import type { SpanContext } from '@opentelemetry/api';
import type { NewJob } from '../core/storage.js';
import type { WorkerObserver } from './observer.js';
import { VERSION } from './version.js';

const SYSTEM = 'leasehold';
const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

// a proxy that finds the app's provider when a span starts, so one made at load serves a provider registered later
let cached: Tracer | undefined;
function tracer(): Tracer {
  return (cached ??= trace.getTracer('leasehold', VERSION));
}

/** The W3C traceparent of a span context. */
export function toTraceparent(sc: SpanContext): string {
  return `00-${sc.traceId}-${sc.spanId}-${(sc.traceFlags & 0xff).toString(16).padStart(2, '0')}`;
}

/** A stored traceparent as a remote span context, or undefined when absent or malformed. */
export function fromTraceparent(tp: string | undefined): SpanContext | undefined {
  const m = tp === undefined ? null : TRACEPARENT.exec(tp);
  if (!m) return undefined;
  const sc: SpanContext = { traceId: m[1] as string, spanId: m[2] as string, traceFlags: parseInt(m[3] as string, 16), isRemote: true };
  return isSpanContextValid(sc) ? sc : undefined;
}

/** What an enqueue call tells its span once the rows are written (or not). */
export interface SendSpan {
  written(ids: readonly string[]): void;
  failed(e: unknown): void;
}

/**
 * Starts the producer span of one enqueue call and stamps its traceparent on the rows; none
 * when no tracer records (the rows stay unstamped).
 */
export function startSend(rows: NewJob[]): SendSpan | undefined {
  const first = rows[0];
  if (!first) return undefined;
  const span = tracer().startSpan(`send ${first.queue}`, { kind: SpanKind.PRODUCER });
  if (!span.isRecording()) return undefined;
  const single = rows.length === 1;
  span.setAttributes({
    'messaging.system': SYSTEM,
    'messaging.operation.type': 'send',
    'messaging.operation.name': 'send',
    'messaging.destination.name': first.queue,
    'leasehold.job.type': first.type,
    ...(single ? {} : { 'messaging.batch.message_count': rows.length }),
  });
  const tp = toTraceparent(span.spanContext());
  for (const row of rows) row.traceContext = tp;
  return {
    written(ids) {
      if (single && ids[0] !== undefined) span.setAttribute('messaging.message.id', ids[0]);
      span.end();
    },
    failed(e) {
      fail(span, e instanceof Error ? e.message : String(e));
      span.end();
    },
  };
}

function fail(span: Span, message: string): void {
  span.setStatus({ code: SpanStatusCode.ERROR, message });
}

/** The worker's consumer span per attempt; the handler runs inside it. */
export function tracingObserver(): WorkerObserver {
  const t = tracer();
  return {
    attempt(job, run) {
      const enqueued = fromTraceparent(job.traceContext);
      // a root of its own: the worker's dispatch may run inside the previous attempt's context
      const span = t.startSpan(`process ${job.queue}`, { kind: SpanKind.CONSUMER, ...(enqueued ? { links: [{ context: enqueued }] } : {}) }, ROOT_CONTEXT);
      if (!span.isRecording()) {
        run();
        return undefined;
      }
      span.setAttributes({
        'messaging.system': SYSTEM,
        'messaging.operation.type': 'process',
        'messaging.operation.name': 'process',
        'messaging.destination.name': job.queue,
        'messaging.message.id': job.id,
        'leasehold.job.type': job.type,
        'leasehold.job.attempt': job.attempts,
      });
      context.with(trace.setSpan(ROOT_CONTEXT, span), run);
      return {
        ended({ outcome, error }) {
          span.setAttribute('leasehold.attempt.outcome', outcome);
          if (outcome === 'failed' || outcome === 'dead' || outcome === 'lost') fail(span, error?.message ?? outcome);
          span.end();
        },
      };
    },
  };
}
