/**
 * A workflow's graph laid out in layers, left to right: each job one layer right of its furthest
 * parent (longest path), jobs of a layer in id order, edges as curves from a parent's right side
 * to a child's left. Pure numbers; workflow-svg.ts draws them.
 */
import type { WorkflowGraph, WorkflowNode } from '../../core/storage.js';

/** A node's box and the gaps between layers and rows, in SVG units. */
export const BOX = { w: 172, h: 44, gapX: 56, gapY: 14, pad: 8 } as const;

export interface PlacedNode extends WorkflowNode {
  layer: number;
  x: number;
  y: number;
}

export interface PlacedEdge {
  parent: string;
  child: string;
  /** the SVG path */
  d: string;
}

export interface GraphLayout {
  nodes: PlacedNode[];
  edges: PlacedEdge[];
  width: number;
  height: number;
}

/** Longest-path layers: a job without a parent among `jobs` is in layer 0, any other one past its furthest parent. */
export function layers(jobs: readonly WorkflowNode[], edges: WorkflowGraph['edges']): Map<string, number> {
  const children = new Map<string, string[]>();
  const waiting = new Map<string, number>(jobs.map((j) => [j.id, 0]));
  for (const [p, c] of edges) {
    if (!waiting.has(p) || !waiting.has(c)) continue;
    children.set(p, [...(children.get(p) ?? []), c]);
    waiting.set(c, waiting.get(c)! + 1);
  }
  const layer = new Map<string, number>();
  const ready = jobs.filter((j) => waiting.get(j.id) === 0).map((j) => j.id);
  for (const id of ready) layer.set(id, 0);
  for (let at = 0; at < ready.length; at++) {
    const id = ready[at]!;
    for (const c of children.get(id) ?? []) {
      layer.set(c, Math.max(layer.get(c) ?? 0, layer.get(id)! + 1));
      const left = waiting.get(c)! - 1;
      waiting.set(c, left);
      if (left === 0) ready.push(c);
    }
  }
  // a cycle cannot be stored (enqueue refuses one); were one read, its jobs go last rather than vanish
  const last = Math.max(-1, ...layer.values()) + 1;
  for (const j of jobs) if (!layer.has(j.id)) layer.set(j.id, last);
  return layer;
}

/** Every job placed in its layer's column, in id order down it; the edges between placed jobs. */
export function layout(g: Pick<WorkflowGraph, 'jobs' | 'edges'>): GraphLayout {
  const layerOf = layers(g.jobs, g.edges);
  const columns: WorkflowNode[][] = [];
  for (const j of [...g.jobs].sort((a, b) => Number(a.id) - Number(b.id))) (columns[layerOf.get(j.id)!] ??= []).push(j);
  const nodes: PlacedNode[] = [];
  columns.forEach((col, layer) => col.forEach((j, row) => nodes.push({ ...j, layer, x: BOX.pad + layer * (BOX.w + BOX.gapX), y: BOX.pad + row * (BOX.h + BOX.gapY) })));
  const at = new Map(nodes.map((n) => [n.id, n]));
  const edges = g.edges.flatMap(([parent, child]) => {
    const a = at.get(parent);
    const b = at.get(child);
    if (!a || !b) return [];
    const x1 = a.x + BOX.w;
    const y1 = a.y + BOX.h / 2;
    const x2 = b.x;
    const y2 = b.y + BOX.h / 2;
    const mid = (x1 + x2) / 2;
    return [{ parent, child, d: `M${x1} ${y1} C${mid} ${y1} ${mid} ${y2} ${x2 - 4} ${y2}` }];
  });
  const rows = Math.max(0, ...columns.map((c) => c?.length ?? 0));
  return { nodes, edges, width: BOX.pad * 2 + columns.length * BOX.w + Math.max(0, columns.length - 1) * BOX.gapX, height: BOX.pad * 2 + rows * BOX.h + Math.max(0, rows - 1) * BOX.gapY };
}
