/**
 * `leasehold queues list|pause|resume`: a paused queue's jobs are claimed by no worker on any
 * host until it is resumed; running jobs finish, enqueues and schedules go on. `list` shows every
 * queue that holds jobs or was ever paused, with its due and running counts.
 */
import type { Command } from 'commander';
import { createClient } from '../runtime/client.js';
import { iso, table } from './format.js';
import { withStorage } from './main.js';

interface QueueLine {
  queue: string;
  paused: boolean;
  pausedAt: Date | null;
  due: number;
  running: number;
  oldestDueAgeMs: number | null;
}

export function registerQueueCommands(program: Command): void {
  const queues = program.command('queues').description('pause and resume queues for the whole cluster');
  queues
    .command('list')
    .description('queues with their state, due and running jobs, and the oldest due job\'s age')
    .option('--json', 'print JSON')
    .action(async (o: { json?: boolean }, cmd: Command) => {
      await withStorage(cmd, async (s) => {
        // the bounded summary names the idle queues too, without a GROUP BY over every job
        const [states, health, summary] = await Promise.all([s.queues.states(), s.queues.health(), s.queues.summary()]);
        const names = [...new Set([...states.map((q) => q.queue), ...health.map((q) => q.queue), ...summary.groups.map((c) => c.queue)])].sort();
        const lines: QueueLine[] = names.map((queue) => {
          const st = states.find((q) => q.queue === queue);
          const h = health.find((q) => q.queue === queue);
          return { queue, paused: st?.paused ?? false, pausedAt: st?.pausedAt ?? null, due: h?.due ?? 0, running: h?.running ?? 0, oldestDueAgeMs: h?.oldestDueAgeMs ?? null };
        });
        const text = () =>
          lines.length === 0
            ? '(no queues)'
            : table(['QUEUE', 'STATE', 'DUE', 'RUNNING', 'OLDEST DUE', 'PAUSED AT'], lines.map((l) => [l.queue, l.paused ? 'paused' : 'active', l.due, l.running, l.oldestDueAgeMs === null ? '-' : `${Math.round(l.oldestDueAgeMs / 1000)} s`, iso(l.pausedAt)]));
        process.stdout.write(`${o.json ? JSON.stringify(lines, null, 2) : text()}\n`);
      });
    });
  for (const verb of ['pause', 'resume'] as const) {
    queues
      .command(`${verb} <queue>`)
      .description(verb === 'pause' ? 'no worker claims from this queue until it is resumed (running jobs finish)' : 'workers claim from this queue again')
      .action(async (queue: string, _o, cmd: Command) => {
        await withStorage(cmd, async (s) => {
          const client = createClient({ storage: s });
          const st = verb === 'pause' ? await client.pauseQueue(queue) : await client.resumeQueue(queue);
          process.stdout.write(`queue ${st.queue} ${st.paused ? 'paused' : 'resumed'}\n`);
        });
      });
  }
}
