/**
 * Signed-in sessions, kept in this process: sign-in adds the session id with its expiry,
 * sign-out removes it, and an auth cookie counts only while its session is here. So a cookie
 * copied before sign-out is refused after it. Several replicas behind one address need sticky
 * sessions (or the bearer token); a restart signs everyone out.
 */

export class SessionStore {
  /** session id → expiry (ms); Map order is insertion order, the eviction order when full */
  readonly #sessions = new Map<string, number>();

  constructor(
    readonly max = 10_000,
    readonly now: () => number = Date.now,
  ) {}

  add(sid: string, expiresAt: number): void {
    this.#sessions.delete(sid);
    if (this.#sessions.size >= this.max) this.#sweep();
    this.#sessions.set(sid, expiresAt);
  }

  valid(sid: string): boolean {
    const exp = this.#sessions.get(sid);
    if (exp === undefined) return false;
    if (exp > this.now()) return true;
    this.#sessions.delete(sid);
    return false;
  }

  revoke(sid: string): void {
    this.#sessions.delete(sid);
  }

  get size(): number {
    return this.#sessions.size;
  }

  /** Expired ones first; then the oldest sign-ins, so the store never grows past `max`. */
  #sweep(): void {
    const now = this.now();
    for (const [sid, exp] of this.#sessions) if (exp <= now) this.#sessions.delete(sid);
    while (this.#sessions.size >= this.max) {
      const oldest = this.#sessions.keys().next().value;
      if (oldest === undefined) break;
      this.#sessions.delete(oldest);
    }
  }
}
