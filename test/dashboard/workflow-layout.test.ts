/** The workflow graph's layered layout (src/dashboard/pages/workflow-layout.ts): longest-path layers, id order down a layer, edges between placed boxes. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { WorkflowNode } from '../../src/core/storage.js';
import { BOX, layers, layout } from '../../src/dashboard/pages/workflow-layout.js';

const node = (id: string): WorkflowNode => ({ id, type: `t${id}`, status: 'waiting' });

test('each job one layer past its furthest parent; a job whose parents were not read starts a layer 0', () => {
  // 1 → 2 → 3, and 1 → 3 directly: 3 goes after 2, not beside it; 9's parent is outside the read
  const jobs = ['1', '2', '3', '9', '10'].map(node);
  const got = layers(jobs, [['1', '2'], ['2', '3'], ['1', '3'], ['8', '9'], ['9', '10']]);
  assert.deepEqual(Object.fromEntries(got), { 1: 0, 2: 1, 3: 2, 9: 0, 10: 1 });
});

test('a diamond: columns by layer, rows by id within one, curves from right side to left side, a box big enough for all', () => {
  const l = layout({ jobs: ['12', '10', '11', '13'].map(node), edges: [['10', '11'], ['10', '12'], ['11', '13'], ['12', '13']] });
  const at = Object.fromEntries(l.nodes.map((n) => [n.id, [n.layer, n.x, n.y]]));
  const col = (k: number) => BOX.pad + k * (BOX.w + BOX.gapX);
  const row = (k: number) => BOX.pad + k * (BOX.h + BOX.gapY);
  assert.deepEqual(at, { 10: [0, col(0), row(0)], 11: [1, col(1), row(0)], 12: [1, col(1), row(1)], 13: [2, col(2), row(0)] });
  assert.equal(l.edges.length, 4);
  assert.ok(l.edges[0]!.d.startsWith(`M${col(0) + BOX.w} ${row(0) + BOX.h / 2} `));
  assert.equal(l.width, col(2) + BOX.w + BOX.pad);
  assert.equal(l.height, row(1) + BOX.h + BOX.pad);
});

test('a cycle (never stored) still places every job', () => {
  const l = layout({ jobs: ['1', '2'].map(node), edges: [['1', '2'], ['2', '1']] });
  assert.equal(l.nodes.length, 2);
});
