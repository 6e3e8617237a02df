/**
 * Sign-in throttling: token buckets per client address and one for everyone. Each failed
 * sign-in takes a token from both; a sign-in is refused (429, with how long to wait) while
 * either is empty. A right token never takes one, so an operator who types it once is never
 * slowed, and guessing stays at a few tries a minute per address and about one a second in all.
 */

export interface BucketRule {
  /** tries allowed at once */
  burst: number;
  /** one try back every this many ms */
  refillMs: number;
}

export interface ThrottleOptions {
  perClient?: BucketRule;
  global?: BucketRule;
  /** addresses remembered at most (the least recently failed are forgotten first) */
  maxClients?: number;
  now?: () => number;
}

interface Level {
  tokens: number;
  at: number;
}

class Buckets {
  readonly #levels = new Map<string, Level>();

  constructor(
    readonly rule: BucketRule,
    readonly maxKeys: number,
    readonly now: () => number,
  ) {}

  #level(key: string, now: number): number {
    const l = this.#levels.get(key);
    return l ? Math.min(this.rule.burst, l.tokens + (now - l.at) / this.rule.refillMs) : this.rule.burst;
  }

  /** ms until a try is allowed (0: now). */
  wait(key: string): number {
    const level = this.#level(key, this.now());
    return level >= 1 ? 0 : Math.ceil((1 - level) * this.rule.refillMs);
  }

  take(key: string): void {
    const now = this.now();
    const tokens = Math.max(0, this.#level(key, now) - 1);
    this.#levels.delete(key); // re-inserted last: Map order is the eviction order
    if (this.#levels.size >= this.maxKeys) this.#evict(now);
    this.#levels.set(key, { tokens, at: now });
  }

  #evict(now: number): void {
    for (const [k, l] of this.#levels) if (l.tokens + (now - l.at) / this.rule.refillMs >= this.rule.burst) this.#levels.delete(k);
    while (this.#levels.size >= this.maxKeys) {
      const oldest = this.#levels.keys().next().value;
      if (oldest === undefined) break;
      this.#levels.delete(oldest);
    }
  }

  get size(): number {
    return this.#levels.size;
  }
}

const EVERYONE = '*';

export class SignInThrottle {
  readonly #clients: Buckets;
  readonly #all: Buckets;

  constructor(opts: ThrottleOptions = {}) {
    const now = opts.now ?? Date.now;
    this.#clients = new Buckets(opts.perClient ?? { burst: 5, refillMs: 12_000 }, opts.maxClients ?? 10_000, now);
    this.#all = new Buckets(opts.global ?? { burst: 30, refillMs: 1_000 }, 1, now);
  }

  /** ms this client must wait before its next sign-in (0: it may try now). */
  check(client: string): number {
    return Math.max(this.#clients.wait(client), this.#all.wait(EVERYONE));
  }

  failed(client: string): void {
    this.#clients.take(client);
    this.#all.take(EVERYONE);
  }

  /** addresses currently remembered (for tests of the bound) */
  get clients(): number {
    return this.#clients.size;
  }
}
