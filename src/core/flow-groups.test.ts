import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { type ClaimFilter, flowGroups, lockNames } from './flow-groups.js';
import { flowPlan, runFlowPlan } from './flow.js';

const TYPES = ['a', 'b', 'c'];
const QUEUES = ['q', 'r', 's'];
const takes = (f: ClaimFilter, type: string, queue: string): boolean =>
  f.types.includes(type) && (f.queues === null ? !f.exceptQueues.includes(queue) : f.queues.includes(queue));

describe('flowGroups', () => {
  it('every (type, queue) the claim takes falls in exactly one part, under the limits of its type and its queue', () => {
    const sub = (xs: string[]) => fc.subarray(xs);
    fc.assert(
      fc.property(fc.subarray(TYPES, { minLength: 1 }), fc.option(sub(QUEUES), { nil: null }), sub(TYPES), sub(QUEUES), (types, queues, limitedTypes, limitedQueues) => {
        const flow = Object.fromEntries(limitedTypes.map((t) => [t, { maxRunning: 1 }]));
        const queueFlow = Object.fromEntries(limitedQueues.map((q) => [q, { maxRunning: 1 }]));
        const { limited, free } = flowGroups({ types, queues, flow, queueFlow });
        const parts: ClaimFilter[] = [...limited, ...(free ? [free] : [])];
        // 'z': a queue nobody names
        for (const type of TYPES) {
          for (const queue of [...QUEUES, 'z']) {
            const asked = types.includes(type) && (queues === null || queues.includes(queue));
            const hits = parts.filter((p) => takes(p, type, queue));
            assert.equal(hits.length, asked ? 1 : 0, `${type} in ${queue}`);
            if (!asked) continue;
            const scopes = limited.find((g) => g === hits[0])?.scopes ?? [];
            assert.equal(scopes.some((s) => s.kind === 'type' && s.name === type), limitedTypes.includes(type), `${type} in ${queue}: the type's limits`);
            assert.equal(scopes.some((s) => s.kind === 'queue' && s.name === queue), limitedQueues.includes(queue), `${type} in ${queue}: the queue's limits`);
            if (scopes.length > 0) assert.ok(scopes[0]!.kind === 'queue' || scopes.length === 1, 'a queue leads its group');
          }
        }
      }),
    );
  });

  it('names inherited from Object are not limits; a queue row is named apart from a type row', () => {
    const { limited, free } = flowGroups({ types: ['constructor'], queues: ['toString'], flow: {}, queueFlow: {} });
    assert.deepEqual(limited, []);
    assert.deepEqual(free, { types: ['constructor'], queues: ['toString'], exceptQueues: [] });
    const [g] = flowGroups({ types: ['x'], queues: null, flow: { x: { maxRunning: 1 } }, queueFlow: { x: { maxRunning: 2 } } }).limited;
    assert.deepEqual(lockNames(g!), ['@x', 'x']);
  });
});

describe('flowPlan with a queue and a type', () => {
  it('takes a job only when both fit, and spends both rates', () => {
    const scopes = [
      { kind: 'queue' as const, name: 'q', flow: { maxRunning: 3, rate: { limit: 10, periodMs: 1_000 } } },
      { kind: 'type' as const, name: 't', flow: { maxRunning: 1, rate: { limit: 5, periodMs: 1_000, perKey: true } } },
    ];
    const empty = { running: 0, runningByKey: new Map<string, number>() };
    const rows = [
      { id: '1', type: 't', queue: 'q', key: 'k' },
      { id: '2', type: 't', queue: 'q', key: 'k' },
      { id: '3', type: 'u', queue: 'q', key: 'k' },
    ];
    const pick = runFlowPlan(flowPlan(scopes, [empty, empty], 0, 2), (q) => rows.filter((r) => !q.excludeIds.includes(r.id)));
    assert.deepEqual(pick.ids, ['1', '3']);
    assert.deepEqual(Object.fromEntries(pick.buckets), { '@q': { tokens: 8, refilledAt: 0 }, 't|k': { tokens: 4, refilledAt: 0 } });
  });
});
