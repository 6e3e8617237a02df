/**
 * A worker process: loads one system, waits for "go", starts its worker, and reports to the
 * coordinator over IPC — jobs done so far (drain) or each job's enqueue→start latency.
 */
import type { RunningWorker } from './common.ts';
import { nowMs } from './common.ts';
import { findSystem } from './systems/index.ts';

const [id, concArg, mode] = process.argv.slice(2);
const sys = findSystem(id as string);
const concurrency = Number(concArg);
const send = (m: object) => process.send?.(m);

let count = 0;
let flushing = false;
const onJob =
  mode === 'latency'
    ? (p: unknown) => send({ lat: nowMs() - Number((p as { t: number }).t) })
    : () => {
        count++;
        if (!flushing) {
          flushing = true;
          setTimeout(() => {
            flushing = false;
            send({ done: count });
          }, 2);
        }
      };

let running: RunningWorker | undefined;
process.on('message', (m: { go?: boolean; stop?: boolean }) => {
  if (m.go) {
    sys.worker({ concurrency, onJob }).then(
      (w) => {
        running = w;
        send({ started: true });
      },
      (e: unknown) => {
        send({ error: String((e as Error).stack ?? e) });
      },
    );
  }
  if (m.stop) {
    const bye = () => {
      send({ stopped: true, done: count });
      setTimeout(() => process.exit(0), 20);
    };
    (running ? running.stop() : Promise.resolve()).then(bye, bye);
  }
});
process.on('unhandledRejection', (e) => send({ error: String((e as Error)?.stack ?? e) }));
send({ ready: true });
