/**
 * Renews every lease this worker holds, every 1/3 of the lease, in one storage call.
 * A lease reported lost (taken over, cancelled, finished elsewhere) aborts its handler.
 * A lease we could not renew before it lapsed is treated as lost too: after that moment
 * another worker may legitimately hold it.
 *
 * Lease times are local and monotonic (performance.now()): a lease confirmed by a write sent at
 * `t` is surely held until `t + lease`, whatever the wall clock does meanwhile.
 */
import { AbortReason, heartbeatInterval } from '../core/index.js';
import type { JobStatus } from '../core/status.js';
import type { ClaimedJob, Storage } from '../core/storage.js';
import { resolvedWithin, settlesBy } from './deadline.js';
import type { Logger } from './env.js';

export interface HeldLease {
  job: ClaimedJob;
  /** performance.now() until which the lease is surely held: the last confirming write's send time plus the lease */
  expiresAt: number;
  /** past its max runtime: stop renewing */
  readonly pastMaxRuntime: boolean;
  abort(reason: AbortReason): void;
}

/**
 * How long before its local expiry a lease is no longer trusted for starting an effect: the
 * effect's own start takes time, and the database's clock may run a little ahead of ours.
 */
export function leaseSafetyMargin(leaseMs: number): number {
  return Math.max(1, Math.floor(leaseMs / 10));
}

export class Heartbeater {
  #timer: NodeJS.Timeout | undefined;
  #stopped = false;
  #failing = false;

  constructor(
    private readonly storage: Storage,
    private readonly leaseMs: number,
    private readonly held: () => Iterable<HeldLease>,
    private readonly log: Logger,
    private readonly onTick: () => Promise<void> = async () => {},
  ) {}

  /** how often leases are renewed */
  get every(): number {
    return heartbeatInterval(this.leaseMs);
  }

  start(): void {
    const every = this.every;
    const loop = async () => {
      await this.beat([...this.held()]);
      // a beat still out when stop() came goes no further: no worker heartbeat, no next beat
      if (this.#stopped) return;
      // the worker's own heartbeat: not waited for past the next beat if it does not answer
      await settlesBy(this.onTick(), Date.now() + every);
      if (!this.#stopped) this.#timer = setTimeout(loop, every);
    };
    this.#timer = setTimeout(loop, every);
  }

  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#timer);
  }

  /**
   * Renew these leases now; returns the ids that were lost. Waits for the database only until
   * the leases lapse: a renewal that does not answer (a starved pool, a server that stopped
   * responding) must not leave handlers running past their lease, when another worker may
   * already hold the job. Each lease is given up when its own local expiry passes unanswered.
   */
  async beat(leases: HeldLease[]): Promise<Set<string>> {
    const lost = new Set<string>();
    let pending = leases.filter((l) => !l.pastMaxRuntime);
    if (pending.length === 0) return lost;
    const sentAt = performance.now();
    const call = this.storage.leases.heartbeat({ leases: pending.map((l) => ({ id: l.job.id, leaseToken: l.job.leaseToken })), leaseMs: this.leaseMs });
    for (;;) {
      let answer: Awaited<typeof call> | 'unanswered';
      try {
        // a lease found lapsed already (the process was stopped or its event loop stalled)
        // still gets one beat's time for the database's answer: lost to whom, or renewed
        answer = await resolvedWithin(call, Math.max(earliestExpiry(pending), sentAt + this.every) - performance.now(), 'unanswered');
      } catch (e) {
        this.#failed((e as Error).message);
        return this.#lapse(pending, lost).lost;
      }
      if (answer !== 'unanswered') {
        if (this.#failing) this.log.info({ event: 'heartbeat.recovered' }, 'heartbeats are landing again');
        this.#failing = false;
        const lostById = new Map(answer.lost.map((l) => [l.id, l.status]));
        for (const l of pending) {
          if (lostById.has(l.job.id)) {
            lost.add(l.job.id);
            l.abort(lostReason(lostById.get(l.job.id) ?? null));
          } else {
            // Count from when we sent: the database may have stamped it any time after. A later
            // renewal (an explicit ctx.heartbeat) may have answered first: never move it back.
            l.expiresAt = Math.max(l.expiresAt, sentAt + this.leaseMs);
          }
        }
        return lost;
      }
      this.#failed('the database did not answer before a lease lapsed');
      pending = this.#lapse(pending, lost).kept;
      if (pending.length === 0) return lost;
    }
  }

  #failed(err: string): void {
    if (!this.#failing) {
      this.log.error({ event: 'heartbeat.failed', err }, 'could not renew leases; retrying at the next beat, handlers are aborted if their lease lapses first');
    }
    this.#failing = true;
  }

  /** Aborts the leases whose local expiry has passed (adding them to `lost`); returns the rest. */
  #lapse(leases: HeldLease[], lost: Set<string>): { kept: HeldLease[]; lost: Set<string> } {
    const now = performance.now();
    const kept: HeldLease[] = [];
    for (const l of leases) {
      if (now >= l.expiresAt) {
        lost.add(l.job.id);
        l.abort(new AbortReason('LEASE_LOST', 'lease lapsed while the database was unreachable'));
      } else kept.push(l);
    }
    return { kept, lost };
  }
}

function earliestExpiry(leases: HeldLease[]): number {
  let at = Infinity;
  for (const l of leases) if (l.expiresAt < at) at = l.expiresAt;
  return at;
}

function lostReason(status: JobStatus | null): AbortReason {
  if (status === 'cancelled') return new AbortReason('CANCELLED', 'job was cancelled by an operator');
  return new AbortReason('LEASE_LOST', `lease no longer held (job is ${status ?? 'gone'})`);
}
