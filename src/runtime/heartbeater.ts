/**
 * Renews every lease this worker holds, every 1/3 of the lease, in one storage call.
 * A lease reported lost (taken over, cancelled, finished elsewhere) aborts its handler.
 * A lease we could not renew before it lapsed is treated as lost too: after that moment
 * another worker may legitimately hold it.
 */
import { AbortReason, heartbeatInterval } from '../core/index.js';
import type { JobStatus } from '../core/status.js';
import type { ClaimedJob, Storage } from '../core/storage.js';
import type { Logger } from './env.js';

export interface HeldLease {
  job: ClaimedJob;
  /** local time by which the lease surely lapses unless renewed */
  expiresAt: number;
  /** past its max runtime: stop renewing */
  readonly pastMaxRuntime: boolean;
  abort(reason: AbortReason): void;
}

export class Heartbeater {
  #timer: NodeJS.Timeout | undefined;
  #failing = false;

  constructor(
    private readonly storage: Storage,
    private readonly leaseMs: number,
    private readonly held: () => Iterable<HeldLease>,
    private readonly log: Logger,
    private readonly onTick: () => Promise<void> = async () => {},
  ) {}

  start(): void {
    const every = heartbeatInterval(this.leaseMs);
    const loop = async () => {
      await this.beat([...this.held()]);
      await this.onTick().catch(() => {});
      this.#timer = setTimeout(loop, every);
    };
    this.#timer = setTimeout(loop, every);
  }

  stop(): void {
    clearTimeout(this.#timer);
  }

  /** Renew these leases now; returns the ids that were lost. */
  async beat(leases: HeldLease[]): Promise<Set<string>> {
    const lost = new Set<string>();
    const renewable = leases.filter((l) => !l.pastMaxRuntime);
    if (renewable.length === 0) return lost;
    const sentAt = Date.now();
    try {
      const res = await this.storage.heartbeat({
        leases: renewable.map((l) => ({ id: l.job.id, leaseToken: l.job.leaseToken })),
        leaseMs: this.leaseMs,
      });
      if (this.#failing) this.log.info({ event: 'heartbeat.recovered' }, 'heartbeats are landing again');
      this.#failing = false;
      const lostById = new Map(res.lost.map((l) => [l.id, l.status]));
      for (const l of renewable) {
        if (lostById.has(l.job.id)) {
          lost.add(l.job.id);
          l.abort(lostReason(lostById.get(l.job.id) ?? null));
        } else {
          // Count from when we sent: the database may have stamped it any time after.
          l.expiresAt = sentAt + this.leaseMs;
        }
      }
    } catch (e) {
      if (!this.#failing) {
        this.log.error({ event: 'heartbeat.failed', err: (e as Error).message }, 'could not renew leases; retrying at the next beat, handlers are aborted if their lease lapses first');
      }
      this.#failing = true;
      const now = Date.now();
      for (const l of renewable) {
        if (now >= l.expiresAt) {
          lost.add(l.job.id);
          l.abort(new AbortReason('LEASE_LOST', 'lease lapsed while the database was unreachable'));
        }
      }
    }
    return lost;
  }
}

function lostReason(status: JobStatus | null): AbortReason {
  if (status === 'cancelled') return new AbortReason('CANCELLED', 'job was cancelled by an operator');
  return new AbortReason('LEASE_LOST', `lease no longer held (job is ${status ?? 'gone'})`);
}
