/**
 * The part of the client the dashboard uses. The first calls are required; each optional one
 * adds its page or button when present (schedules, locks, alerts, queue pause, throughput,
 * schedule actions), so a narrower client still gets a working dashboard.
 */
import type { ScheduleRow, LockRow } from '../core/schedules.js';
import type { AlertStateRow, AttemptOutcomeCount, JobRow, QueueHealth, QueueState } from '../core/storage.js';
import type { Client } from '../runtime/client.js';

export type DashboardClient = Pick<Client, 'listJobs' | 'getJob' | 'listAttempts' | 'countJobs' | 'listWorkers' | 'listEffects' | 'unhandledJobs' | 'retryNow' | 'cancel'> & {
  listSchedules?: () => Promise<readonly ScheduleRow[]>;
  /** alert rules' states, shown on the overview */
  listAlerts?: () => Promise<readonly AlertStateRow[]>;
  /** queue pause and resume, offered on the queues page */
  queueStates?: () => Promise<readonly QueueState[]>;
  pauseQueue?: (queue: string) => Promise<QueueState>;
  resumeQueue?: (queue: string) => Promise<QueueState>;
  /** per queue: due, running, age of the oldest due job */
  queueHealth?: () => Promise<readonly QueueHealth[]>;
  /** attempts ended in the last `sinceMs`, by type, queue and outcome: the queues page's throughput */
  attemptOutcomes?: (params: { sinceMs: number }) => Promise<readonly AttemptOutcomeCount[]>;
  /** held locks and semaphore slots: the locks page */
  listLocks?: () => Promise<readonly LockRow[]>;
  /** the schedules page's Enable / Disable */
  setScheduleEnabled?: (name: string, enabled: boolean) => Promise<ScheduleRow>;
  /** the schedules page's Run now: one job of the schedule, now */
  runScheduleNow?: (name: string) => Promise<JobRow>;
};
