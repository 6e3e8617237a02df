/**
 * Retention from the command line, shared by `worker`, `tick`, `prune` and `doctor`: how long
 * finished jobs are kept (`--retain-succeeded`, `--retain-dead`, a duration or `never`) and
 * `--no-prune`. `tick` prunes once per run, as a worker's sweeper does.
 */
import type { Command } from 'commander';
import type { Logger } from '../runtime/env.js';
import { DEFAULT_RETENTION, Retention, type RetentionOptions } from '../runtime/retention.js';
import type { Storage } from '../core/storage.js';
import { parseDuration } from './parse.js';

export interface RetentionFlags {
  retainSucceeded?: number | false;
  retainDead?: number | false;
  /** false with --no-prune */
  prune?: boolean;
}

/** A retention age: a duration (`7d`, `36h`) or `never` (keep for ever). */
export function parseRetention(text: string): number | false {
  return text.trim() === 'never' ? false : parseDuration(text);
}

const days = (ms: number) => `${ms / 86_400_000}d`;

/** --retain-succeeded and --retain-dead (doctor judges the backlog by them). */
export function addRetentionAgeOptions(cmd: Command): Command {
  return cmd
    .option('--retain-succeeded <duration>', `keep succeeded jobs this long, or "never" to keep them (default ${days(DEFAULT_RETENTION.succeededMs)})`, parseRetention)
    .option('--retain-dead <duration>', `keep dead and cancelled jobs this long, or "never" (default ${days(DEFAULT_RETENTION.deadMs)})`, parseRetention);
}

/** The retention ages plus --no-prune, for the commands that prune as they run (worker, tick). */
export function addRetentionOptions(cmd: Command): Command {
  return addRetentionAgeOptions(cmd).option('--no-prune', 'never prune finished jobs from this process');
}

/** The Worker's `retention` option the flags ask for. */
export function retentionFrom(o: RetentionFlags): RetentionOptions | false {
  if (o.prune === false) return false;
  return { ...(o.retainSucceeded !== undefined ? { succeededMs: o.retainSucceeded } : {}), ...(o.retainDead !== undefined ? { deadMs: o.retainDead } : {}) };
}

/**
 * `tick`'s prune, once per run, within the tick's time budget (`until`, ms since the epoch; each
 * status still gets a batch): a failure is logged, never the tick's exit code (its jobs ran).
 */
export async function pruneOnce(storage: Storage, o: RetentionFlags, log: Logger, until: number): Promise<void> {
  try {
    await new Retention(storage, retentionFrom(o), log).prune({ keepGoing: () => Date.now() < until });
  } catch (e) {
    log.error({ event: 'prune.failed', err: (e as Error).message }, 'pruning finished jobs failed; the next run tries again');
  }
}
