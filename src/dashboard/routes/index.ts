/**
 * Every area of the dashboard, in the order its routes are added. A new area is a file in this
 * folder exporting an `Area` (see ../context.ts) and one line here.
 */
import type { Area } from '../context.js';
import { auth } from './auth.js';
import { bulk } from './bulk.js';
import { charts } from './charts.js';
import { job } from './job.js';
import { jobs } from './jobs.js';
import { locks } from './locks.js';
import { overview } from './overview.js';
import { queues } from './queues.js';
import { schedules } from './schedules.js';
import { workers } from './workers.js';
import { workflows } from './workflows.js';

export const AREAS: readonly Area[] = [
  overview,
  bulk,
  jobs,
  job,
  workflows,
  charts,
  queues,
  schedules,
  locks,
  workers,
  auth,
];
