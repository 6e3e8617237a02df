/** Helpers of the profiling tools: a CPU profile of one section, and the database server's CPU. */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';

/**
 * With PROFILE_OUT=file.cpuprofile set, starts a CPU profile of this process now (not of the
 * module loading and setup before); the returned function stops it and writes the file.
 * With ALLOC_OUT=file.heapprofile, samples allocations instead, including the objects garbage
 * collection already freed: what the collector's time per job is spent on (summarize with
 * summarize-allocations.ts).
 */
export async function profileSection(): Promise<() => Promise<void>> {
  const out = process.env.PROFILE_OUT;
  const allocOut = process.env.ALLOC_OUT;
  if (!out && !allocOut) return async () => {};
  const inspector = new Session();
  inspector.connect();
  if (allocOut) {
    await inspector.post('HeapProfiler.enable');
    await inspector.post('HeapProfiler.startSampling', { samplingInterval: 512, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true } as never);
    return async () => writeFileSync(allocOut, JSON.stringify((await inspector.post('HeapProfiler.stopSampling')).profile));
  }
  await inspector.post('Profiler.enable');
  await inspector.post('Profiler.start');
  return async () => writeFileSync(out as string, JSON.stringify((await inspector.post('Profiler.stop')).profile));
}

/** CPU (ms) used so far by the database servers' processes (postgres, mariadbd, redis-server), from /proc. */
export function serverCpuMs(): number {
  const tick = 10; // USER_HZ is 100 on Linux: one tick is 10 ms
  let total = 0;
  for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      if (!/^(postgres|mariadbd|mysqld|redis-server)$/.test(name)) continue;
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      total += (Number(fields[11]) + Number(fields[12])) * tick; // utime, stime
    } catch {
      /* the process ended meanwhile */
    }
  }
  return total;
}
