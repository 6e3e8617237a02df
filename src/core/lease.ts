/**
 * Lease arithmetic. A lease is renewed well before it lapses so that one slow or lost
 * heartbeat does not cost the job: every 1/3 of the lease by default (DESIGN §2.3).
 */
export const DEFAULT_LEASE_MS = 30_000;

export function heartbeatInterval(leaseMs: number): number {
  return Math.max(10, Math.floor(leaseMs / 3));
}

/**
 * How often the sweeper looks for expired leases: a fraction of the lease, kept inside the
 * 10–30 s band from the brief for ordinary leases and shorter for short test leases.
 */
export function sweepInterval(leaseMs: number): number {
  return Math.min(30_000, Math.max(50, Math.floor(leaseMs / 2)));
}

/** Sweeper batches stay small so one sweep never holds locks for long. */
export const SWEEP_BATCH = 100;
