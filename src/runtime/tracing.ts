/**
 * Tracing through @opentelemetry/api only: a producer span per enqueue call whose context is
 * stored with each job (a W3C traceparent), and a consumer span per attempt linked to it, so an
 * attempt hours later in another process is found from the trace that enqueued it. Spans follow
 * the messaging semantic conventions: the attributes a sampler may decide on are given at start,
 * the rest only to spans that record. Without a registered tracer provider every span is a
 * non-recording no-op: nothing is stored and the handler runs in the caller's context unchanged.
 */
import { type Context, INVALID_SPANID, INVALID_TRACEID, ProxyTracerProvider, ROOT_CONTEXT, type Span, SpanKind, type SpanOptions, SpanStatusCode, type Tracer, context, trace } from '@opentelemetry/api';
import type { SpanContext } from '@opentelemetry/api';
import type { ClaimedJob, NewJob } from '../core/storage.js';
import type { AttemptObservation, WorkerObserver } from './observer.js';
import { VERSION } from './version.js';

const SYSTEM = 'leasehold';
// version 00, lowercase hex: its fields then sit at fixed offsets, so nothing needs capturing
const TRACEPARENT = /^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/;
// queues are the app's own few names; the bound only keeps made-up names from growing it
const MAX_QUEUES = 256;

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
  if (tp === undefined || !TRACEPARENT.test(tp)) return undefined;
  const traceId = tp.slice(3, 35);
  const spanId = tp.slice(36, 52);
  if (traceId === INVALID_TRACEID || spanId === INVALID_SPANID) return undefined;
  return { traceId, spanId, traceFlags: parseInt(tp.slice(53), 16), isRemote: true };
}

/** How spans of one operation on one queue start: the name, and what samplers see. */
interface Start {
  name: string;
  options: SpanOptions;
}

// the same for every span of an operation on a queue, so made once (the SDK copies what it is given)
function starts(operation: 'send' | 'process', kind: SpanKind): (queue: string) => Start {
  const byQueue = new Map<string, Start>();
  return (queue) => {
    let start = byQueue.get(queue);
    if (start) return start;
    if (byQueue.size >= MAX_QUEUES) byQueue.clear();
    const attributes = { 'messaging.system': SYSTEM, 'messaging.operation.type': operation, 'messaging.operation.name': operation, 'messaging.destination.name': queue };
    start = { name: `${operation} ${queue}`, options: { kind, attributes } };
    byQueue.set(queue, start);
    return start;
  };
}
const sendStart = starts('send', SpanKind.PRODUCER);
const processStart = starts('process', SpanKind.CONSUMER);

/** What an enqueue call tells its span once the rows are written (or not). */
export interface SendSpan {
  written(ids: readonly string[]): void;
  failed(e: unknown): void;
}

/**
 * Starts the producer span of one enqueue call and stamps its traceparent on the rows; none
 * when no tracer records (the rows stay unstamped: a link to an unrecorded span leads nowhere).
 */
export function startSend(rows: NewJob[]): SendSpan | undefined {
  const first = rows[0];
  if (!first) return undefined;
  const start = sendStart(first.queue);
  const span = tracer().startSpan(start.name, start.options);
  if (!span.isRecording()) return undefined;
  const single = rows.length === 1;
  span.setAttribute('leasehold.job.type', first.type);
  if (!single) span.setAttribute('messaging.batch.message_count', rows.length);
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

// the API's key for the active span, learnt from the API itself by asking it to set one
let spanKey: symbol | undefined;
const keyRecorder: Context = { getValue: () => undefined, setValue: (key) => ((spanKey = key), keyRecorder), deleteValue: () => keyRecorder };
trace.setSpan(keyRecorder, trace.wrapSpanContext({ traceId: INVALID_TRACEID, spanId: INVALID_SPANID, traceFlags: 0 }));

/**
 * The context an attempt's handler runs in: its span and nothing else. The API's own context
 * (trace.setSpan on the root) copies a map and makes three closures per attempt, which a busy
 * worker pays for in collections; anything set on this one gets a context of the API's.
 */
class AttemptSpanContext implements Context {
  constructor(private readonly span: Span) {}
  getValue(key: symbol): unknown {
    return key === spanKey ? this.span : undefined;
  }
  setValue(key: symbol, value: unknown): Context {
    return trace.setSpan(ROOT_CONTEXT, this.span).setValue(key, value);
  }
  deleteValue(key: symbol): Context {
    return key === spanKey ? ROOT_CONTEXT : this;
  }
}

// the API's no-op provider: what a proxy without a delegate hands out
const NOOP_PROVIDER = new ProxyTracerProvider().getDelegate();

/** Whether a tracer provider is registered; another copy of the API's proxy counts as one. */
function providerRegistered(): boolean {
  const provider = trace.getTracerProvider();
  return !(provider instanceof ProxyTracerProvider) || provider.getDelegate() !== NOOP_PROVIDER;
}

/**
 * The worker's consumer span per attempt; the handler runs inside it. Without a provider it has
 * no `attempt` (the worker starts jobs without it): asked again at each claim, so a provider
 * registered later is found.
 */
export function tracingObserver(): WorkerObserver {
  const t = tracer();
  // the jobs of one enqueue call share its traceparent and are mostly claimed together: parsed once
  let linked: { tp: string; queue: string; options: SpanOptions } | undefined;
  const optionsFor = (job: ClaimedJob, start: Start): SpanOptions => {
    const tp = job.traceContext;
    if (tp === undefined) return start.options;
    if (linked?.tp !== tp || linked.queue !== job.queue) {
      const enqueued = fromTraceparent(tp);
      linked = { tp, queue: job.queue, options: enqueued ? { ...start.options, links: [{ context: enqueued }] } : start.options };
    }
    return linked.options;
  };
  const attempt = (job: ClaimedJob, run: () => void): AttemptObservation | undefined => {
    // a root of its own: the worker's dispatch may run inside the previous attempt's context
    const start = processStart(job.queue);
    const span = t.startSpan(start.name, optionsFor(job, start), ROOT_CONTEXT);
    if (!span.isRecording()) {
      // sampled out, it still tells the handler's own spans that its trace is not kept; the API's no-op span (no provider) has no trace to tell of
      if (span.spanContext().traceId !== INVALID_TRACEID) context.with(new AttemptSpanContext(span), run);
      else run();
      return undefined;
    }
    span.setAttribute('messaging.message.id', job.id);
    span.setAttribute('leasehold.job.type', job.type);
    span.setAttribute('leasehold.job.attempt', job.attempts);
    context.with(new AttemptSpanContext(span), run);
    return {
      ended({ outcome, error }) {
        span.setAttribute('leasehold.attempt.outcome', outcome);
        if (outcome === 'failed' || outcome === 'dead' || outcome === 'lost') fail(span, error?.message ?? outcome);
        span.end();
      },
    };
  };
  const observer: WorkerObserver = {};
  const refresh = (): void => void (observer.attempt = providerRegistered() ? attempt : undefined);
  observer.claimed = refresh;
  refresh();
  return observer;
}
