import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { ValidationError } from './errors.js';
import type { JobDefaults } from './job-input.js';
import { DEFAULT_JOB_DEFAULTS, DEFAULT_MAX_PAYLOAD_BYTES, buildNewJob, parsePayloadText, validateName, validatePayload } from './job-input.js';
import { LATEST_TIME_MS, MAX_DELAY_MS, MAX_PAYLOAD_DEPTH, validateEffectKey, validateKeyText } from './limits.js';

const D: JobDefaults = DEFAULT_JOB_DEFAULTS;

function rejects(fn: () => unknown, code: string, what: string): void {
  assert.throws(fn, (e: unknown) => {
    assert.ok(e instanceof ValidationError, `${what}: a ValidationError, got ${String(e)}`);
    assert.equal(e.code, code, `${what}: code`);
    return true;
  });
}

describe('validatePayload', () => {
  it('accepts plain JSON and returns its text', () => {
    for (const p of [null, true, 0, -1.5, 'x', [], {}, { a: [1, { b: 'c' }] }, Object.create(null) as object]) {
      assert.equal(validatePayload(p), JSON.stringify(p));
    }
    const shared = { x: 1 };
    assert.doesNotThrow(() => validatePayload({ a: shared, b: shared, c: [shared, shared] }), 'repeated (not circular) references are fine');
  });

  it('rejects what JSON cannot hold faithfully with INVALID_PAYLOAD', () => {
    const circular: Record<string, unknown> = { a: 1 };
    circular.self = circular;
    const circularArray: unknown[] = [];
    circularArray.push({ back: circularArray });
    class Money {
      amount = 5;
    }
    const bad: [string, unknown][] = [
      ['BigInt', { n: 10n }],
      ['top-level BigInt', 10n],
      ['function', { f: () => 1 }],
      ['symbol', { s: Symbol('x') }],
      ['undefined', undefined],
      ['nested undefined in array', [1, undefined]],
      ['NaN', { n: Number.NaN }],
      ['Infinity', [Infinity]],
      ['-Infinity', -Infinity],
      ['Date', { at: new Date() }],
      ['Map', new Map([['a', 1]])],
      ['Set', { s: new Set([1]) }],
      ['class instance', { m: new Money() }],
      ['RegExp', /x/],
      ['circular object', circular],
      ['circular array', circularArray],
    ];
    for (const [what, p] of bad) rejects(() => validatePayload(p), 'INVALID_PAYLOAD', what);
  });

  it('names the offending path', () => {
    assert.throws(() => validatePayload({ a: { b: [0, 1n] } }), /payload\.a\.b\[1\]/);
  });

  it('rejects oversized payloads with PAYLOAD_TOO_LARGE, counting UTF-8 bytes', () => {
    rejects(() => validatePayload({ blob: 'x'.repeat(DEFAULT_MAX_PAYLOAD_BYTES) }), 'PAYLOAD_TOO_LARGE', 'default limit');
    assert.doesNotThrow(() => validatePayload('x'.repeat(8), 10), '"xxxxxxxx" is 10 bytes');
    rejects(() => validatePayload('x'.repeat(9), 10), 'PAYLOAD_TOO_LARGE', 'one byte over');
    rejects(() => validatePayload('é'.repeat(5), 11), 'PAYLOAD_TOO_LARGE', 'é is two bytes');
  });

  it('accepts any JSON value (property)', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (v) => {
        const text = validatePayload(v, Number.MAX_SAFE_INTEGER);
        assert.deepEqual(JSON.parse(text), JSON.parse(JSON.stringify(v)));
      }),
    );
  });

  it('parsePayloadText: bad JSON is INVALID_PAYLOAD; good JSON is size-checked', () => {
    assert.deepEqual(parsePayloadText('{"a":[1,2]}'), { a: [1, 2] });
    rejects(() => parsePayloadText('{a:1}'), 'INVALID_PAYLOAD', 'not JSON');
    rejects(() => parsePayloadText('"xxxxxxxxxx"', 5), 'PAYLOAD_TOO_LARGE', 'too large');
  });
});

describe('buildNewJob', () => {
  it('fills defaults', () => {
    const j = buildNewJob('email.send', { to: 'a' }, {}, D);
    assert.deepEqual(j, {
      type: 'email.send',
      payload: { to: 'a' },
      queue: 'default',
      priority: 0,
      runAt: undefined,
      runAfterMs: 0,
      maxAttempts: 5,
      idempotencyKey: null,
      timeoutMs: D.timeoutMs,
      maxRuntimeMs: D.maxRuntimeMs,
    });
  });

  it('takes options: delay, runAt as string, queue, priority, key, timeouts', () => {
    const j = buildNewJob('t', null, { delayMs: 1500.4, queue: 'billing', priority: -5, maxAttempts: 1, idempotencyKey: 'k', timeoutMs: 10, maxRuntimeMs: 20 }, D);
    assert.equal(j.runAfterMs, 1500);
    assert.equal(j.queue, 'billing');
    assert.equal(j.priority, -5);
    assert.equal(j.maxAttempts, 1);
    assert.equal(j.idempotencyKey, 'k');
    assert.equal(j.timeoutMs, 10);
    assert.equal(j.maxRuntimeMs, 20);
    const at = buildNewJob('t', null, { runAt: '2030-01-02T03:04:05.678Z' }, D);
    assert.equal(at.runAt?.toISOString(), '2030-01-02T03:04:05.678Z');
  });

  it('rejects negative or non-finite delays', () => {
    for (const delayMs of [-1, -0.5, Number.NaN, Infinity]) rejects(() => buildNewJob('t', {}, { delayMs }, D), 'INVALID_OPTION', `delay ${delayMs}`);
  });

  it('rejects zero, negative and fractional maxAttempts', () => {
    for (const maxAttempts of [0, -1, 1.5, Number.NaN]) {
      rejects(() => buildNewJob('t', {}, { maxAttempts }, D), 'INVALID_OPTION', `maxAttempts ${maxAttempts}`);
    }
  });

  it('rejects bad type and queue names', () => {
    for (const type of ['', 'has space', 'x'.repeat(129), 'ünï', 'semi;colon']) rejects(() => buildNewJob(type, {}, {}, D), 'INVALID_OPTION', `type ${JSON.stringify(type)}`);
    rejects(() => buildNewJob(42 as unknown as string, {}, {}, D), 'INVALID_OPTION', 'non-string type');
    rejects(() => buildNewJob('t', {}, { queue: 'bad queue' }, D), 'INVALID_OPTION', 'queue');
    assert.equal(validateName('job type', 'a.b:c-d/e_f'), 'a.b:c-d/e_f');
  });

  it('rejects other bad options', () => {
    const bad: [string, object][] = [
      ['runAt and delayMs', { runAt: new Date(), delayMs: 5 }],
      ['invalid runAt', { runAt: 'not a date' }],
      ['empty key', { idempotencyKey: '' }],
      ['long key', { idempotencyKey: 'k'.repeat(256) }],
      ['priority out of range', { priority: 40_000 }],
      ['zero timeout', { timeoutMs: 0 }],
      ['fractional maxRuntime', { maxRuntimeMs: 1.5 }],
    ];
    for (const [what, opts] of bad) rejects(() => buildNewJob('t', {}, opts, D), 'INVALID_OPTION', what);
  });

  it('rejects a bad payload before anything else is built', () => {
    rejects(() => buildNewJob('t', { at: new Date() }, {}, D), 'INVALID_PAYLOAD', 'Date payload');
    rejects(() => buildNewJob('t', 'x'.repeat(100), {}, D, 10), 'PAYLOAD_TOO_LARGE', 'custom limit');
  });
});

describe('payload checks of buildNewJob (a cheap size bound first, the exact walk when it cannot decide)', () => {
  const bytes = (v: unknown) => new TextEncoder().encode(JSON.stringify(v)).length;
  const outcome = (fn: () => unknown): string => {
    try {
      fn();
      return 'ok';
    } catch (e) {
      return e instanceof ValidationError ? `${e.code}: ${e.message}` : `other: ${String(e)}`;
    }
  };

  it('refuses exactly when the UTF-8 size is over the limit, as validatePayload does (property)', () => {
    const json = fc.oneof(fc.jsonValue(), fc.jsonValue({ stringUnit: 'grapheme' }), fc.jsonValue({ stringUnit: 'binary' }));
    fc.assert(
      fc.property(json, fc.integer({ min: -8, max: 8 }), (v, delta) => {
        const max = Math.max(0, bytes(v) + delta);
        const built = outcome(() => buildNewJob('t', v, {}, D, max));
        assert.equal(built, outcome(() => validatePayload(v, max)));
        assert.equal(built === 'ok', bytes(v) <= max);
      }),
      { numRuns: 500 },
    );
  });

  it('the bound holds for the worst cases: escapes, astral characters, long numbers', () => {
    for (const v of ['\u0001'.repeat(10), '😀'.repeat(10), -0.0000012345678901234567, [-1.7976931348623157e308, '\\"'], { '\n\u0000': 'é' }]) {
      assert.equal(outcome(() => buildNewJob('t', v, {}, D, bytes(v))), 'ok', JSON.stringify(v));
      assert.match(outcome(() => buildNewJob('t', v, {}, D, bytes(v) - 1)), /^PAYLOAD_TOO_LARGE: payload is \d+ bytes/, JSON.stringify(v));
    }
  });

  it('deep nesting, sparse arrays and shared objects still pass; cycles and bad values fail with the exact walk’s message', () => {
    let deep: unknown = 1;
    for (let i = 0; i < MAX_PAYLOAD_DEPTH; i++) deep = [deep];
    const sparse = [1, , 3]; // eslint-disable-line no-sparse-arrays
    const shared = { x: 1 };
    for (const v of [deep, sparse, { a: shared, b: [shared, shared] }]) assert.equal(outcome(() => buildNewJob('t', v, {}, D)), 'ok');
    const circular: Record<string, unknown> = { a: [1, { b: 2 }] };
    (circular.a as unknown[]).push(circular);
    let deepBad: unknown = { when: new Date(0) };
    for (let i = 0; i < MAX_PAYLOAD_DEPTH - 2; i++) deepBad = { n: deepBad };
    for (const v of [circular, deepBad, { a: [0, 1n] }, { n: Number.NaN }]) {
      const built = outcome(() => buildNewJob('t', v, {}, D));
      assert.match(built, /^INVALID_PAYLOAD: /);
      assert.equal(built, outcome(() => validatePayload(v)));
    }
    assert.equal(outcome(() => buildNewJob('t', circular, {}, D)), 'INVALID_PAYLOAD: payload.a[2] is circular');
  });
});

describe('the supported range of what a user gives (the same on every database)', () => {
  const nested = (depth: number, leaf: unknown = 1, wrap: (v: unknown) => unknown = (v) => [v]): unknown => {
    let v = leaf;
    for (let i = 0; i < depth; i++) v = wrap(v);
    return v;
  };

  it('runAt: from 1970-01-01T00:00:00.000Z to 9999-12-31T23:59:59.999Z inclusive', () => {
    for (const runAt of [new Date(0), new Date(LATEST_TIME_MS), '1970-01-01T00:00:00Z', '9999-12-31T23:59:59.999Z']) {
      assert.equal(buildNewJob('t', {}, { runAt }, D).runAt?.getTime(), new Date(runAt).getTime(), String(runAt));
    }
    const outside = [new Date(-1), new Date(LATEST_TIME_MS + 1), new Date(8.64e15), new Date(-8.64e15), '+010000-01-01T00:00:00Z', '0500-01-01T00:00:00Z', '1969-12-31T23:59:59.999Z'];
    for (const runAt of outside) rejects(() => buildNewJob('t', {}, { runAt }, D), 'INVALID_OPTION', `runAt ${String(runAt)}`);
    assert.throws(() => buildNewJob('t', {}, { runAt: new Date(LATEST_TIME_MS + 1) }, D), /runAt must be from 1970-01-01T00:00:00.000Z to 9999-12-31T23:59:59.999Z; got \+010000/);
  });

  it('runAt strings are ISO 8601 dates that exist; what Date.parse would guess at is refused', () => {
    const ok: [string, string][] = [
      ['2030-01-02T03:04:05.678Z', '2030-01-02T03:04:05.678Z'],
      ['2030-01-02', '2030-01-02T00:00:00.000Z'],
      ['2030-01-02T03:04Z', '2030-01-02T03:04:00.000Z'],
      ['2030-01-02T03:04:05+01:00', '2030-01-02T02:04:05.000Z'],
      ['2030-01-02T03:04:05.123456-0230', '2030-01-02T05:34:05.123Z'],
      ['2028-02-29T00:00:00Z', '2028-02-29T00:00:00.000Z'],
    ];
    for (const [text, iso] of ok) assert.equal(buildNewJob('t', {}, { runAt: text }, D).runAt?.toISOString(), iso, text);
    for (const text of ['5', '2030', '2030-1-2', 'March 7, 2030', '2030-02-31', '2027-02-29T00:00:00Z', '2030-13-01', '2030-01-01T24:00:00Z', '2030-01-01T10:60Z', '2030-01-01T00:00:00+01', ' 2030-01-02', '']) {
      rejects(() => buildNewJob('t', {}, { runAt: text }, D), 'INVALID_OPTION', `runAt ${JSON.stringify(text)}`);
    }
  });

  it('delayMs: at most MAX_DELAY_MS (100 years), so now + delay stays in range on every database', () => {
    assert.equal(MAX_DELAY_MS, 100 * 365.25 * 86_400_000);
    assert.equal(buildNewJob('t', {}, { delayMs: MAX_DELAY_MS }, D).runAfterMs, MAX_DELAY_MS);
    for (const delayMs of [MAX_DELAY_MS + 1, 2 ** 53, 8.64e15, Number.MAX_VALUE]) rejects(() => buildNewJob('t', {}, { delayMs }, D), 'INVALID_OPTION', `delay ${delayMs}`);
  });

  it('idempotency keys: non-empty, at most 255 UTF-16 units, no NUL, no lone surrogate', () => {
    for (const key of ['k', 'k'.repeat(255), '😀'.repeat(127), 'a b\tc', 'ünï'.repeat(10)]) assert.equal(buildNewJob('t', {}, { idempotencyKey: key }, D).idempotencyKey, key);
    const bad: [string, unknown][] = [
      ['empty', ''], ['256 units', 'k'.repeat(256)], ['NUL', 'k\u0000'], ['NUL inside', 'a\u0000b'], ['lone high surrogate', 'k\uD800'],
      ['lone low surrogate', '\uDC00k'], ['reversed pair', '\uDE00\uD83D'], ['a number', 42], ['null', null],
    ];
    for (const [what, key] of bad) rejects(() => buildNewJob('t', {}, { idempotencyKey: key as string }, D), 'INVALID_OPTION', `key ${what}`);
    assert.throws(() => buildNewJob('t', {}, { idempotencyKey: 'k\uD800' }, D), /idempotencyKey.*surrogate/);
    assert.throws(() => buildNewJob('t', {}, { idempotencyKey: 'k\u0000' }, D), /idempotencyKey.*NUL/);
  });

  it("keys under leasehold: are leasehold's own (a batch callback's): refused as an idempotency or unique key", () => {
    rejects(() => buildNewJob('t', {}, { idempotencyKey: 'leasehold:batch:7' }, D), 'INVALID_OPTION', 'idempotencyKey');
    for (const mode of ['forever', 'active', 'period'] as const) {
      rejects(() => buildNewJob('t', {}, { unique: { key: 'leasehold:batch:7', mode, periodMs: 60_000 } }, D, undefined, 0), 'INVALID_OPTION', `unique ${mode}`);
    }
    assert.equal(buildNewJob('t', {}, { idempotencyKey: 'leaseholdx:1' }, D).idempotencyKey, 'leaseholdx:1');
  });

  it('validateKeyText and validateEffectKey: the same rules for every text stored as an identity', () => {
    assert.equal(validateKeyText('owner', 'host:1', 255), 'host:1');
    rejects(() => validateKeyText('owner', 'o\u0000', 255), 'INVALID_OPTION', 'owner NUL');
    assert.equal(validateEffectKey('send:1'), 'send:1');
    assert.equal(validateEffectKey('e'.repeat(512)), 'e'.repeat(512));
    for (const key of ['', 'e'.repeat(513), 'e\u0000', 'e\uD800', 7]) rejects(() => validateEffectKey(key as string), 'INVALID_OPTION', `effect key ${JSON.stringify(key)}`);
  });

  it(`payloads nest at most ${MAX_PAYLOAD_DEPTH} arrays/objects deep; deeper is INVALID_PAYLOAD, never a RangeError`, () => {
    const asObject = (v: unknown) => ({ a: v });
    for (const wrap of [undefined, asObject]) {
      assert.doesNotThrow(() => validatePayload(nested(MAX_PAYLOAD_DEPTH, 1, wrap)));
      assert.doesNotThrow(() => buildNewJob('t', nested(MAX_PAYLOAD_DEPTH, 1, wrap), {}, D));
      for (const depth of [MAX_PAYLOAD_DEPTH + 1, 30_000]) {
        const v = nested(depth, 1, wrap);
        rejects(() => validatePayload(v), 'INVALID_PAYLOAD', `validatePayload depth ${depth}`);
        rejects(() => buildNewJob('t', v, {}, D), 'INVALID_PAYLOAD', `buildNewJob depth ${depth}`);
        assert.throws(() => validatePayload(v), new RegExp(`nests deeper than ${MAX_PAYLOAD_DEPTH}`));
      }
    }
    // the reported case: 30,000 nested arrays in 60 KB of text
    const text = `${'['.repeat(30_000)}${']'.repeat(30_000)}`;
    rejects(() => parsePayloadText(text), 'INVALID_PAYLOAD', '30,000 nested arrays as text');
    assert.throws(() => parsePayloadText(text), /nests deeper than 64/);
  });

  it('payload strings may hold any UTF-16 text: JSON escapes NUL and lone surrogates, so every database stores the same text', () => {
    const odd = { s: 'x\uD800y', n: 'a\u0000b', ['k\u0000\uDC00']: ['\uDBFF'] };
    const text = validatePayload(odd);
    assert.ok(/^[\x20-\x7e]*$/.test(text), 'the stored text is plain ASCII');
    assert.deepEqual(JSON.parse(text), odd);
  });
});
