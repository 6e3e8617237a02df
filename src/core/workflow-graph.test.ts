/** planFlow: a workflow's graph is checked before anything is written; cycles are named; the order puts parents first. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { ValidationError } from './errors.js';
import { type FlowNode, planFlow } from './workflow-graph.js';

const refuses = (nodes: FlowNode[], message: RegExp) =>
  assert.throws(() => planFlow(nodes), (e: unknown) => e instanceof ValidationError && e.code === 'INVALID_FLOW' && message.test(e.message));

describe('planFlow', () => {
  it('a diamond: the root first, the join last, siblings in input order', () => {
    const order = planFlow([
      { key: 'join', dependsOn: ['left', 'right'] },
      { key: 'right', dependsOn: ['root'] },
      { key: 'left', dependsOn: ['root'] },
      { key: 'root' },
    ]);
    assert.deepEqual(order, [3, 1, 2, 0]);
  });

  it('stored parents ({ jobId }) are not part of the order and need no key', () => {
    assert.deepEqual(planFlow([{ key: 'a', dependsOn: [{ jobId: '42' }] }, { key: 'b', dependsOn: ['a', { jobId: '7' }] }]), [0, 1]);
  });

  it('refuses cycles, naming one parent → child', () => {
    refuses([{ key: 'a', dependsOn: ['b'] }, { key: 'b', dependsOn: ['a'] }], /cycle: (a → b → a|b → a → b)$/);
    refuses([{ key: 'x' }, { key: 'a', dependsOn: ['x', 'c'] }, { key: 'b', dependsOn: ['a'] }, { key: 'c', dependsOn: ['b'] }], /cycle: .*a → b → c → a|b → c → a → b|c → a → b → c/);
    refuses([{ key: 'a', dependsOn: ['a'] }], /"a" waits for itself/);
  });

  it('refuses unknown keys, duplicate keys and parents, bad ids, an empty workflow', () => {
    refuses([{ key: 'a', dependsOn: ['nope'] }], /"a" waits for "nope", which is not a key/);
    refuses([{ key: 'a' }, { key: 'a' }], /used twice/);
    refuses([{ key: 'p' }, { key: 'a', dependsOn: ['p', 'p'] }], /names "p" twice/);
    refuses([{ key: 'a', dependsOn: [{ jobId: '01' }] }], /invalid id/);
    refuses([{ key: 'a', dependsOn: [{ jobId: 5 as unknown as string }] }], /invalid id/);
    refuses([], /at least one job/);
    assert.throws(() => planFlow([{ key: '' }]), ValidationError);
  });

  it('property: any DAG is accepted with every parent before its children; one back edge makes it refused', () => {
    const dag = fc.integer({ min: 1, max: 30 }).chain((n) =>
      fc.tuple(
        fc.constant(n),
        // edges from a lower to a higher rank: acyclic by construction
        fc.array(fc.tuple(fc.nat(n - 1), fc.nat(n - 1)), { maxLength: 60 }).map((pairs) => [
          ...new Map(pairs.filter(([a, b]) => a !== b).map(([a, b]): [number, number] => [Math.min(a, b), Math.max(a, b)]).map((e) => [`${e[0]}-${e[1]}`, e] as const)).values(),
        ]),
        fc.shuffledSubarray([...Array(n).keys()], { minLength: n, maxLength: n }),
      ),
    );
    fc.assert(
      fc.property(dag, ([n, edges, perm]) => {
        // node at position perm[r] has rank r
        const keyOf = (rank: number) => `k${rank}`;
        const nodes: FlowNode[] = Array.from({ length: n }, () => ({ key: '', dependsOn: [] as string[] }));
        perm.forEach((pos, rank) => (nodes[pos] = { key: keyOf(rank), dependsOn: edges.filter(([, c]) => c === rank).map(([p]) => keyOf(p)) }));
        const order = planFlow(nodes);
        assert.equal(order.length, n);
        const at = new Map(order.map((pos, i) => [nodes[pos]!.key, i]));
        for (const [p, c] of edges) assert.ok(at.get(keyOf(p))! < at.get(keyOf(c))!, `k${p} before k${c}`);
        const [first] = edges;
        if (first) {
          // the child's descendant-or-self now also parents the parent: a cycle
          const [p, c] = first;
          const parent = nodes[perm[p]!]!;
          nodes[perm[p]!] = { key: parent.key, dependsOn: [...(parent.dependsOn ?? []), keyOf(c)] };
          assert.throws(() => planFlow(nodes), /cycle/);
        }
      }),
      { numRuns: 300 },
    );
  });
});
