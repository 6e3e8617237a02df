/**
 * Checks for everything a request may carry: job ids, list filters, the base path, the `next`
 * target after login. A bad value raises BadRequest (→ 400, nothing read or changed).
 */
import { isJobStatus } from '../core/status.js';
import type { ListFilters } from './pages/jobs.js';

export class BadRequest extends Error {}

const ID = /^[1-9][0-9]{0,18}$/;
const MAX_NAME = 200;

export function parseJobId(raw: string | undefined): string {
  if (raw === undefined || !ID.test(raw)) throw new BadRequest(`not a job id: ${JSON.stringify(raw ?? '')} (expected a positive integer)`);
  return raw;
}

/** A batch id from a path or a cursor. */
export function parseBatchId(raw: string | undefined): string {
  if (raw === undefined || !ID.test(raw)) throw new BadRequest(`not a batch id: ${JSON.stringify(raw ?? '')} (expected a positive integer)`);
  return raw;
}

function name(what: string, raw: string | undefined): string | undefined {
  if (raw === undefined || raw === '') return undefined;
  // eslint-disable-next-line no-control-regex
  if (raw.length > MAX_NAME || /[\u0000-\u001f\u007f]/.test(raw)) throw new BadRequest(`${what} filter must be at most ${MAX_NAME} printable characters`);
  return raw;
}

/** A queue or schedule name from a form: the same characters the client accepts. */
export function parseName(what: string, raw: unknown): string {
  if (typeof raw !== 'string' || !/^[A-Za-z0-9_.:\-/]{1,128}$/.test(raw)) throw new BadRequest(`not a ${what} name: ${JSON.stringify(typeof raw === 'string' ? raw.slice(0, 140) : '')}`);
  return raw;
}

export function parseFilters(query: Record<string, string | undefined>): ListFilters {
  const status = query.status === '' ? undefined : query.status;
  if (status !== undefined && !isJobStatus(status)) {
    throw new BadRequest(`unknown status filter ${JSON.stringify(status)}: expected queued, running, succeeded, failed, dead or cancelled`);
  }
  const before = query.before === undefined || query.before === '' ? undefined : parseJobId(query.before);
  let limit = 50;
  if (query.limit !== undefined && query.limit !== '') {
    if (!/^\d{1,4}$/.test(query.limit) || Number(query.limit) < 1 || Number(query.limit) > 500) throw new BadRequest('limit must be an integer from 1 to 500');
    limit = Number(query.limit);
  }
  return { status, queue: name('queue', query.queue), type: name('type', query.type), before, limit };
}

/** '' or '/a/b' (no trailing slash); only URL-safe path characters. */
export function normaliseBasePath(raw: string | undefined): string {
  if (raw === undefined || raw === '' || raw === '/') return '';
  if (!/^\/[A-Za-z0-9._~\-/]*$/.test(raw) || raw.includes('//') || raw.includes('/..')) {
    throw new TypeError(`basePath must look like "/admin/jobs", got ${JSON.stringify(raw)}`);
  }
  return raw.replace(/\/+$/, '');
}

/** Only a path inside the dashboard may follow a login (no open redirect). */
export function safeNext(base: string, raw: unknown): string {
  const home = `${base}/`;
  if (typeof raw !== 'string' || raw.length > 2000) return home;
  if (!raw.startsWith(home) && raw !== base) return home;
  if (raw.startsWith('//') || raw.includes('\\') || /[\u0000-\u001f]/.test(raw)) return home; // eslint-disable-line no-control-regex
  return raw;
}
