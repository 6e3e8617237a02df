/**
 * `leasehold dashboard`: serve the web dashboard on the database from --db until SIGTERM/SIGINT.
 * Loopback (127.0.0.1, the default) needs no token; any other --host requires one, from
 * --token or (better: not visible in `ps`) LEASEHOLD_DASHBOARD_TOKEN. With a token it answers
 * only loopback, --host and the names given with --allowed-host (DNS rebinding).
 */
import type { Command } from 'commander';
import { Option } from 'commander';
import { ValidationError } from '../core/index.js';
import { createClient } from '../runtime/client.js';
import { createHealth } from '../observe/health.js';
import { createMetrics } from '../observe/metrics.js';
import { openStorage } from '../storage/open.js';
import type { GlobalOpts } from './main.js';
import { parseIntIn } from './parse.js';

interface DashboardOpts {
  port: number;
  host: string;
  token?: string;
  basePath?: string;
  allowedHost: string[];
  allowedOrigin: string[];
  poll: number;
}

const collect = (value: string, previous: string[]) => [...previous, value];

export function registerDashboardCommand(program: Command): void {
  program
    .command('dashboard')
    .description('serve the web dashboard (jobs, attempts, workers; retry and cancel) until SIGTERM/SIGINT')
    .option('--port <n>', 'TCP port', parseIntIn(0, 65535), 8080)
    .option('--host <addr>', 'interface to listen on; anything but loopback requires a token', '127.0.0.1')
    .addOption(new Option('--token <token>', 'require this token (Bearer header or login form); at least 16 characters').env('LEASEHOLD_DASHBOARD_TOKEN'))
    .option('--base-path <path>', 'serve under this path, e.g. /jobs (behind a reverse proxy)')
    .option('--allowed-host <name>', 'with a token: a Host name it answers for, e.g. ops.example.com (repeatable)', collect, [])
    .option('--allowed-origin <origin>', 'an origin allowed to POST when a proxy rewrites Host, e.g. https://ops.example.com (repeatable)', collect, [])
    .option('--poll <ms>', 'how often open pages refresh their numbers (0: never)', parseIntIn(0, 3_600_000), 3000)
    .action(async (o: DashboardOpts, cmd: Command) => {
      const { db } = cmd.optsWithGlobals<GlobalOpts>();
      const storage = await openStorage(db);
      try {
        if ((await storage.schemaVersion()) === 0) throw new ValidationError('INVALID_OPTION', `${storage.dialect} database has no leasehold tables: run \`leasehold migrate\` first`);
        let running;
        // the dashboard's /metrics: the database gauges (when this process is the cluster's sampler) and the process's own
        const observe = { metrics: createMetrics({ storage, defaultMetrics: true }), health: createHealth({ storage }) };
        // loaded here, not at start-up: every other command would pay for the dashboard's modules
        const [{ serveDashboard }, { withOperatorApi }] = await Promise.all([import('../dashboard/index.js'), import('../runtime/operator.js')]);
        try {
          running = await serveDashboard({
            client: withOperatorApi(createClient({ storage })), port: o.port, host: o.host, token: o.token, basePath: o.basePath,
            allowedHosts: o.allowedHost, allowedOrigins: o.allowedOrigin, pollMs: o.poll, observe,
          });
        } catch (e) {
          if (e instanceof TypeError) throw new ValidationError('INVALID_OPTION', e.message);
          throw e;
        }
        process.stdout.write(`leasehold dashboard on ${running.url}${o.token ? ' (token required)' : ''}; Ctrl-C to stop\n`);
        await new Promise<void>((resolve) => {
          const stop = () => {
            process.off('SIGTERM', stop);
            process.off('SIGINT', stop);
            resolve();
          };
          process.on('SIGTERM', stop);
          process.on('SIGINT', stop);
        });
        await running.close();
        observe.health.close();
        await observe.metrics.close();
      } finally {
        await storage.close();
      }
    });
}
