/**
 * Which worker made each of this storage's recent claims, by the claim's token base. A lease's
 * token is its claim's base and the job id (claimWithBase); a base is 128 random bits, new per
 * claim, so a token names its claim and the claim names its worker. A finish of successes whose
 * leases all come from claims recorded here sends that worker's id, and the attempt rows take
 * it from there instead of reading each job row a second time (`finishSucceededBy`).
 *
 * Leases claimed elsewhere (another process, another storage object) or long enough ago to be
 * forgotten are simply not found: their finish reads the worker from the row, as before.
 */

/** Bases remembered: a worker's buffer holds the jobs of a few claims; a job that runs through
 * more claims than this (thousands) is finished the other way. */
const REMEMBERED = 4096;

export class ClaimBases {
  readonly #worker = new Map<string, string>();
  /** false once the database turned out to have no named finish (a schema before 8) */
  #named = true;

  /** The database has no named finish: name no worker from now on. */
  unnamed(): void {
    this.#named = false;
  }

  /** Note that `workerId` claimed with `base`; the oldest base is forgotten past REMEMBERED. */
  add(base: string, workerId: string): void {
    this.#worker.set(base, workerId);
    if (this.#worker.size > REMEMBERED) {
      const oldest = this.#worker.keys().next().value;
      if (oldest !== undefined) this.#worker.delete(oldest);
    }
  }

  /** The one worker whose claims made all these tokens, or undefined (unknown or several). */
  workerOf(tokens: readonly string[]): string | undefined {
    if (!this.#named) return undefined;
    let worker: string | undefined;
    let lastBase = '';
    for (const token of tokens) {
      // a caller may hand in what a job row holds, null for a job not running
      if (typeof token !== 'string') return undefined;
      const dot = token.indexOf('.');
      if (dot <= 0) return undefined;
      // the tokens of one claim come together: one lookup per claim, not per token
      if (dot === lastBase.length && token.startsWith(lastBase)) continue;
      lastBase = token.slice(0, dot);
      const w = this.#worker.get(lastBase);
      if (w === undefined || (worker !== undefined && w !== worker)) return undefined;
      worker = w;
    }
    return worker;
  }
}
