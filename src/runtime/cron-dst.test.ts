/**
 * Cron slots across every 2026–2027 DST transition, against an independent oracle
 * (zone-oracle.test-util.ts: Intl offsets walked minute by minute, no croner), which is itself
 * checked against Python's zoneinfo. `nextAfter(t)` must be the oracle's first slot strictly after
 * t for ANY t — not only for t on a slot — since the scheduler's look-back asks from slot − 1 ms.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { appendFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { nextAfterFor } from './cron.js';
import { firstAfter, oracleSlots, transitions, wallClock } from './zone-oracle.test-util.js';

const MIN = 60_000;
const HOUR = 3_600_000;
const DAY = 86_400_000;
const FROM = Date.UTC(2026, 0, 1);
const TO = Date.UTC(2028, 0, 1);
const ZONES = ['America/New_York', 'Europe/Warsaw', 'Australia/Lord_Howe', 'Asia/Kathmandu', 'America/Santiago'];
const SHAPES = [
  '30 2 * * *', '0 2 * * *', '0 * * * *', '*/15 1-3 * * *', '45 2 * * *', '30 1 * * *', '15,45 30 2 * * *', '0 0 * * *', '30 23 * * *',
  // in a 30-minute gap 02:20 stands for a later instant than 02:35
  '20,35 2 * * *',
];
const TRANSITIONS = new Map(ZONES.map((z) => [z, transitions(z, FROM, TO)]));

const iso = (ms: number | null | undefined) => (ms == null ? String(ms) : new Date(ms).toISOString());
const nextOf = (cron: string, timezone: string) => {
  const next = nextAfterFor({ name: 'x', cron, everyMs: null, timezone });
  return (t: number) => next(new Date(t))?.getTime();
};

/** Where nextAfter and the oracle disagree, for inputs spread over [from, to) and around each slot. */
function disagreements(cron: string, zone: string, from: number, to: number): string[] {
  const slots = oracleSlots(cron, zone, from - DAY, to + 3 * DAY);
  const next = nextOf(cron, zone);
  const inputs: number[] = [];
  const mid = (from + to) / 2;
  // every 10 minutes within 6 hours of the middle (the transition; a gap is 30 or 60 minutes), every 90 minutes further out
  for (let t = from, k = 0; t < to; t += Math.abs(t - mid) < 6 * HOUR ? 10 * MIN : 90 * MIN, k++) inputs.push(t + ((k * 7_919) % MIN));
  for (const s of slots) if (s >= from && s < to) inputs.push(s - 1_000, s - 1, s, s + 1);
  const out: string[] = [];
  for (const t of inputs) {
    const got = next(t);
    const want = firstAfter(slots, t);
    if (got !== want) out.push(`${cron} ${zone}: nextAfter(${iso(t)}) = ${iso(got)}, want ${iso(want)}`);
  }
  return out;
}

/** Every slot in [from, to) by chaining nextAfter from slot to slot. */
function chained(cron: string, zone: string, from: number, to: number): number[] {
  const next = nextOf(cron, zone);
  const out: number[] = [];
  for (let t = next(from - 1); t !== undefined && t < to; t = next(t)) out.push(t);
  return out;
}

const PY = `
import json, sys
from datetime import datetime, timedelta, timezone
try:
    from zoneinfo import ZoneInfo
except ImportError:
    print(json.dumps({"missing": "zoneinfo"})); sys.exit(0)
req = json.load(sys.stdin)
utc = timezone.utc
at = lambda ms: datetime.fromtimestamp(ms / 1000, utc)
ms = lambda dt: round(dt.timestamp() * 1000)
out = {}
for name, walls in req["walls"].items():
    z = ZoneInfo(name)
    off = lambda t: round(t.astimezone(z).utcoffset().total_seconds() * 1000)
    found, t, end = [], at(req["from"]), at(req["to"])
    while t < end:
        n = t + timedelta(minutes=15)
        if off(n) != off(t):
            m = t
            while off(m) == off(t): m += timedelta(minutes=1)
            found.append({"at": ms(m), "before": off(t), "after": off(m)})
        t = n
    # fold=0: a repeated wall time is its first occurrence, a skipped one takes the offset before the gap
    out[name] = {"transitions": found, "instants": [ms(at(w).replace(tzinfo=z)) for w in walls]}
print(json.dumps(out))
`;

function skipLoudly(why: string): void {
  const line = `SKIPPED src/runtime/cron-dst.test.ts oracle cross-check: ${why}`;
  process.stderr.write(`\n!!! ${line}\n\n`);
  if (process.env.LEASEHOLD_SKIP_REPORT) appendFileSync(process.env.LEASEHOLD_SKIP_REPORT, `${line}\n`);
}

describe('cron slots across DST, against an independent oracle', () => {
  it("the oracle agrees with Python's zoneinfo on every 2026–2027 transition and on each wall minute around it", (t) => {
    const walls: Record<string, number[]> = {};
    const instants: Record<string, number[]> = {};
    for (const z of ZONES) {
      const around = [...(TRANSITIONS.get(z) ?? []).map((x) => x.at), Date.UTC(2026, 6, 1)];
      const clock = around.flatMap((a) => [...wallClock(z, a - 3 * HOUR, a + 3 * HOUR)].filter(([, u]) => Math.abs(u - a) < 3 * HOUR));
      walls[z] = clock.map(([w]) => w);
      instants[z] = clock.map(([, u]) => u);
    }
    const py = spawnSync('python3', ['-c', PY], { input: JSON.stringify({ from: FROM, to: TO, walls }), encoding: 'utf8' });
    if (py.error || py.status !== 0) return void (skipLoudly(`python3 unusable (${py.error?.message ?? py.stderr.trim()})`), t.skip('python3 missing'));
    const answer = JSON.parse(py.stdout) as Record<string, { transitions: unknown[]; instants: number[] }> & { missing?: string };
    if (answer.missing) return void (skipLoudly('python3 has no zoneinfo'), t.skip('zoneinfo missing'));
    for (const z of ZONES) {
      assert.deepEqual(TRANSITIONS.get(z), answer[z]?.transitions, `${z}: transitions`);
      assert.deepEqual(instants[z], answer[z]?.instants, `${z}: wall minutes around each transition`);
    }
  });

  it('finds the transitions it should: two a year in each DST zone, none in Kathmandu', () => {
    for (const z of ZONES) assert.equal(TRANSITIONS.get(z)?.length, z === 'Asia/Kathmandu' ? 0 : 4, z);
  });

  for (const zone of ZONES) {
    const around = TRANSITIONS.get(zone)?.length ? TRANSITIONS.get(zone)!.map((x) => x.at) : [Date.UTC(2026, 2, 29), Date.UTC(2027, 9, 31)];
    for (const at of around) {
      it(`${zone} around ${iso(at)}: the chained slots and nextAfter from any instant match the oracle, for ${SHAPES.length} cron shapes`, () => {
        for (const cron of SHAPES) {
          assert.deepEqual(chained(cron, zone, at - 2 * DAY, at + 2 * DAY).map(iso), oracleSlots(cron, zone, at - 2 * DAY, at + 2 * DAY).map(iso), `${cron}: chained slots`);
          const wrong = disagreements(cron, zone, at - 2 * DAY, at + 2 * DAY);
          assert.deepEqual(wrong.slice(0, 5), [], `${wrong.length} wrong answers`);
        }
      });
    }
  }

  it('property: for any instant in 2026–2027 and many zones, nextAfter is the first slot strictly after it', () => {
    const zones = [...ZONES, 'Pacific/Chatham', 'America/St_Johns', 'Europe/Dublin', 'America/Havana', 'UTC'];
    const near = zones.flatMap((z) => transitions(z, FROM, TO).map((x) => ({ z, at: x.at })));
    const input = fc.oneof(
      fc.record({ zone: fc.constantFrom(...zones), t: fc.integer({ min: FROM, max: TO - 4 * DAY }) }),
      fc.constantFrom(...near).chain(({ z, at }) => fc.record({ zone: fc.constant(z), t: fc.integer({ min: at - 6 * HOUR, max: at + 6 * HOUR }) })),
    );
    fc.assert(
      fc.property(input, fc.constantFrom(...SHAPES), ({ zone, t }, cron) => {
        const got = nextOf(cron, zone)(t);
        const want = firstAfter(oracleSlots(cron, zone, t - DAY, t + 3 * DAY), t);
        assert.equal(iso(got), iso(want), `${cron} in ${zone} after ${iso(t)}`);
      }),
      { numRuns: 150 },
    );
  });

  it('property: random cron expressions near random transitions agree with the oracle', () => {
    const near = [...TRANSITIONS].flatMap(([z, list]) => list.map((x) => ({ z, at: x.at })));
    const list = (max: number) => fc.uniqueArray(fc.integer({ min: 0, max }), { minLength: 1, maxLength: 3 }).map((v) => v.join(','));
    const cron = fc.tuple(
      fc.option(list(59), { nil: undefined }),
      fc.oneof(fc.constant('*'), list(59), fc.integer({ min: 2, max: 30 }).map((n) => `*/${n}`)),
      fc.oneof(fc.constant('*'), list(23), fc.tuple(fc.integer({ min: 0, max: 23 }), fc.integer({ min: 0, max: 23 })).map(([a, b]) => `${Math.min(a, b)}-${Math.max(a, b)}`)),
      fc.oneof(fc.constant('*'), list(6)),
    ).map(([sec, min, hour, dow]) => [sec, min, hour, '*', '*', dow].filter((f) => f !== undefined).join(' '));
    const input = fc.constantFrom(...near).chain(({ z, at }) => fc.record({ zone: fc.constant(z), t: fc.integer({ min: at - 2 * DAY, max: at + 2 * DAY }) }));
    fc.assert(
      fc.property(cron, input, (expr, { zone, t }) => {
        const want = firstAfter(oracleSlots(expr, zone, t - DAY, t + 9 * DAY), t);
        assert.equal(iso(nextOf(expr, zone)(t)), iso(want), `${expr} in ${zone} after ${iso(t)}`);
      }),
      { numRuns: 200 },
    );
  });
});
