/**
 * A workflow's page: the graph of the workflow a job belongs to (jobs as boxes in layers, edges
 * parent to child, each box coloured by status and linking to its job), a line of counts, and
 * the jobs as a table. Bounded: the read takes the jobs nearest the one asked about and says
 * when there are more. Statuses, counts and the table are live; the shape is drawn once.
 */
import { html } from 'hono/html';
import type { WorkflowGraph } from '../../core/storage.js';
import type { Html, PageContext, PageSpec } from '../layout.js';
import { truncate } from '../layout.js';
import type { Cell, Column, LiveModel, Part } from '../view.js';
import { badge, cell, link, slot, tableHtml, text } from '../view.js';
import { BOX, layout } from './workflow-layout.js';

export interface WorkflowData {
  /** the job the page was asked about */
  jobId: string;
  graph: WorkflowGraph;
}

const COLS: Column[] = [{ l: 'Job', c: 'num' }, { l: 'Type' }, { l: 'Status' }, { l: 'After' }];
/** the order counts are listed in: a workflow's life */
const ORDER = ['waiting', 'queued', 'running', 'failed', 'succeeded', 'dead', 'cancelled'];

function counts(g: WorkflowGraph): Part[] {
  const by = new Map<string, number>();
  for (const j of g.jobs) by.set(j.status, (by.get(j.status) ?? 0) + 1);
  const seen = [...by.keys()].sort((a, b) => (ORDER.indexOf(a) + 1 || 99) - (ORDER.indexOf(b) + 1 || 99));
  return [text(`${g.jobs.length} job${g.jobs.length === 1 ? '' : 's'}${g.capped ? ' shown' : ''}: `), text(seen.map((s) => `${by.get(s)} ${s}`).join(', '))];
}

export function workflowLive(ctx: PageContext, d: WorkflowData): Required<Pick<LiveModel, 'slots' | 'tables' | 'marks'>> {
  const parents = new Map<string, string[]>();
  for (const [p, c] of d.graph.edges) parents.set(c, [...(parents.get(c) ?? []), p]);
  const jobLink = (id: string): Part => link(`#${id}`, `${ctx.base}/jobs/${id}`);
  const rows: Cell[][] = d.graph.jobs.map((j) => [
    cell(jobLink(j.id), 'num', 'Job'), cell(text(j.type, 'mono'), undefined, 'Type'), cell(badge(j.status), undefined, 'Status'),
    cell((parents.get(j.id) ?? []).flatMap((p, i) => [...(i > 0 ? [text(', ')] : []), jobLink(p)]), undefined, 'After'),
  ]);
  return { slots: { counts: counts(d.graph) }, tables: { workflow: rows }, marks: Object.fromEntries(d.graph.jobs.map((j) => [`j${j.id}`, j.status])) };
}

/** The graph as inline SVG: every string through hono's escaping tag, colours from the stylesheet by status (data-state, redrawn live). */
export function workflowSvg(ctx: PageContext, d: WorkflowData): Html {
  const l = layout(d.graph);
  const mid = BOX.h / 2;
  return html`<svg class="wf-graph" width="${l.width}" height="${l.height}" viewBox="0 0 ${l.width} ${l.height}" role="img" aria-labelledby="wf-title"><title id="wf-title">workflow of job ${d.jobId}: ${l.nodes.length} jobs, ${l.edges.length} edges</title>
<defs><marker id="wf-arrow" viewBox="0 0 8 8" refX="7" refY="4" markerWidth="7" markerHeight="7" orient="auto"><path d="M0 0 L8 4 L0 8 z"></path></marker></defs>
${l.edges.map((e) => html`<path class="wf-edge" d="${e.d}" marker-end="url(#wf-arrow)" data-edge="${e.parent}-${e.child}"></path>`)}
${l.nodes.map((n) => html`<a href="${ctx.base}/jobs/${n.id}"><g class="wf-node${n.id === d.jobId ? ' self' : ''}" data-mark="j${n.id}" data-state="${n.status}" data-node="${n.id}"><title>${n.type} #${n.id}</title>
<rect x="${n.x}" y="${n.y}" width="${BOX.w}" height="${BOX.h}" rx="6"></rect><rect class="wf-bar" x="${n.x}" y="${n.y}" width="5" height="${BOX.h}" rx="2"></rect>
<text x="${n.x + 12}" y="${n.y + mid - 4}">${truncate(n.type, 24)}</text><text class="wf-id" x="${n.x + 12}" y="${n.y + mid + 12}">#${n.id} · <tspan data-mark-text="j${n.id}">${n.status}</tspan></text></g></a>`)}
</svg>`;
}

export function workflowPage(ctx: PageContext, d: WorkflowData, limit: number): PageSpec {
  const m = workflowLive(ctx, d);
  const capped = d.graph.capped ? html`<div class="notice warn">Showing ${d.graph.jobs.length} of at least ${d.graph.jobs.length + 1} jobs: those nearest job ${d.jobId} (a page reads at most ${limit}).</div>` : '';
  const body = html`<h1>Workflow of <a href="${ctx.base}/jobs/${d.jobId}">job ${d.jobId}</a></h1>
${capped}<p>${slot('counts', m.slots.counts ?? [], ctx.csrf)}</p>
<div class="wf">${workflowSvg(ctx, d)}</div>
<h2>Jobs</h2>${tableHtml('workflow', { cols: COLS, rows: m.tables.workflow ?? [], empty: 'No jobs.' }, ctx.csrf, true)}`;
  return { title: `Workflow of job ${d.jobId}`, active: 'jobs', live: `/api/jobs/${d.jobId}/workflow`, body };
}
