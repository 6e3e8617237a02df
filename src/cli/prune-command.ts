/**
 * `leasehold prune`: delete finished jobs past retention now, the whole backlog in bounded
 * batches (an event-loop turn and the database's locks free between them), or with
 * `--dry-run` count what would go, per status, and delete nothing. The effect ledger is kept.
 */
import type { Command } from 'commander';
import { DEFAULT_RETENTION, Retention, type PrunedStatus } from '../runtime/retention.js';
import { table } from './format.js';
import { withStorage } from './main.js';
import { parseIntIn, parseNumberTo } from './parse.js';
import { parseRetention, retentionFrom } from './retention-options.js';

interface PruneOpts {
  succeeded?: number | false;
  dead?: number | false;
  dryRun?: boolean;
  batchSize: number;
  pauseRatio: number;
  json?: boolean;
}

const age = (ms: number | undefined) => (ms === undefined ? 'never' : `${Number((ms / 86_400_000).toFixed(3))}d`);

export function registerPruneCommand(program: Command): void {
  program
    .command('prune')
    .description('delete finished jobs past retention (and their attempts; never the effect ledger)')
    .option('--succeeded <duration>', `prune succeeded jobs finished longer ago than this, or "never" (default ${age(DEFAULT_RETENTION.succeededMs)})`, parseRetention)
    .option('--dead <duration>', `prune dead and cancelled jobs finished longer ago than this, or "never" (default ${age(DEFAULT_RETENTION.deadMs)})`, parseRetention)
    .option('--dry-run', 'count what would be pruned, per status; delete nothing')
    .option('--batch-size <n>', 'jobs deleted per write', parseIntIn(1, 100_000), DEFAULT_RETENTION.batchSize)
    .option('--pause-ratio <n>', 'after each write, wait n times as long as it took (0: back to back, fastest; more: gentler on the claims beside it)', parseNumberTo(100), DEFAULT_RETENTION.pauseRatio)
    .option('--json', 'print JSON')
    .action(async (o: PruneOpts, cmd: Command) => {
      await withStorage(cmd, async (storage) => {
        const policy = retentionFrom({ retainSucceeded: o.succeeded, retainDead: o.dead });
        // an operator's prune clears the whole backlog: no per-run budget
        const retention = new Retention(storage, policy === false ? false : { ...policy, batchSize: o.batchSize, pauseRatio: o.pauseRatio, maxBatches: Infinity });
        const olderThan = Object.fromEntries(retention.rules.map((r) => [r.status, r.olderThanMs])) as Partial<Record<PrunedStatus, number>>;
        const counts = o.dryRun ? await retention.prunable() : (await retention.prune()).pruned;
        const total = counts.succeeded + counts.dead + counts.cancelled;
        if (o.json) {
          process.stdout.write(`${JSON.stringify({ dryRun: o.dryRun === true, olderThanMs: olderThan, jobs: counts, total }, null, 2)}\n`);
          return;
        }
        const rows = (['succeeded', 'dead', 'cancelled'] as const).map((s) => [s, age(olderThan[s]), counts[s]]);
        const head = o.dryRun ? `would prune ${total} job(s); dry run, nothing removed:` : `pruned ${total} job(s):`;
        process.stdout.write(`${head}\n${table(['STATUS', 'FINISHED OVER', 'JOBS'], rows)}\n`);
      });
    });
}
