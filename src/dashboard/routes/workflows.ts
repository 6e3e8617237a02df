/**
 * Workflows and batches: the graph of the workflow a job belongs to (/jobs/:id/workflow), the
 * batch list (/batches) and one batch (/batches/:id), each with its live JSON under /api. Pages
 * whose client call is missing answer 404.
 */
import { batchCallbackKey } from '../../core/batches.js';
import type { JobRow } from '../../core/storage.js';
import { WORKFLOW_GRAPH_LIMIT } from '../../runtime/operator-workflows.js';
import type { Area, Ctx, Kit } from '../context.js';
import { HttpError } from '../context.js';
import { parseBatchId, parseJobId } from '../input.js';
import type { BatchData, BatchListData } from '../pages/batches.js';
import { PAGE, batchLive, batchPage, batchesLive, batchesPage } from '../pages/batches.js';
import type { WorkflowData } from '../pages/workflow.js';
import { workflowLive, workflowPage } from '../pages/workflow.js';

/** the most jobs a workflow page reads */
const GRAPH_LIMIT = WORKFLOW_GRAPH_LIMIT.default;

const missing = () => new HttpError(404, 'No such page.');
const cursor = (c: Ctx, name: string, parse: (raw: string) => string) => {
  const raw = c.req.query(name);
  return raw === undefined || raw === '' ? undefined : parse(raw);
};

async function loadGraph({ client }: Kit, jobId: string): Promise<WorkflowData> {
  if (!client.workflowGraph) throw missing();
  const graph = await client.workflowGraph(jobId, GRAPH_LIMIT);
  if (graph.jobs.length === 0) throw new HttpError(404, `job ${jobId} not found`);
  return { jobId, graph };
}

async function loadBatch({ client }: Kit, batchId: string, after: string | undefined): Promise<BatchData> {
  if (!client.batches || !client.batchMembers) throw missing();
  const [batch, page] = await Promise.all([client.batches.get(batchId), client.batchMembers({ batchId, afterId: after, limit: PAGE + 1 })]);
  if (!batch) throw new HttpError(404, `batch ${batchId} not found`);
  let callback: JobRow | null | undefined;
  if (client.searchJobs && batch.state === 'done') {
    const found = await client.searchJobs({ filter: { idempotencyKey: batchCallbackKey(batch.id) }, limit: 1 });
    callback = found.jobs[0] ?? null;
  }
  return { batch, members: page.slice(0, PAGE), after, more: page.length > PAGE, callback };
}

async function loadList({ client }: Kit, before: string | undefined): Promise<BatchListData> {
  if (!client.listBatches) throw missing();
  const page = await client.listBatches({ beforeId: before, limit: PAGE + 1 });
  return { batches: page.slice(0, PAGE), before, more: page.length > PAGE };
}

export const workflows: Area = (app, kit) => {
  const jobId = (c: Ctx) => parseJobId(c.req.param('id'));
  app.get(kit.path('/jobs/:id/workflow'), async (c) => kit.render(c, workflowPage(kit.page(c), await loadGraph(kit, jobId(c)), GRAPH_LIMIT)));
  app.get(kit.path('/api/jobs/:id/workflow'), async (c) => kit.json(c, workflowLive(kit.page(c), await loadGraph(kit, jobId(c)))));

  const batchId = (c: Ctx) => parseBatchId(c.req.param('id'));
  const after = (c: Ctx) => cursor(c, 'after', parseJobId);
  app.get(kit.path('/batches/:id'), async (c) => kit.render(c, batchPage(kit.page(c), await loadBatch(kit, batchId(c), after(c)))));
  app.get(kit.path('/api/batches/:id'), async (c) => kit.json(c, batchLive(kit.page(c), await loadBatch(kit, batchId(c), after(c)))));

  const before = (c: Ctx) => cursor(c, 'before', parseBatchId);
  app.get(kit.path('/batches'), async (c) => kit.render(c, batchesPage(kit.page(c), await loadList(kit, before(c)))));
  app.get(kit.path('/api/batches'), async (c) => kit.json(c, batchesLive(kit.page(c), await loadList(kit, before(c)))));
};
