/**
 * The jobs page's count of a filter, kept for a while: the page counts when its filter changes
 * (a navigation), and the live refresh reads the kept count instead of counting again every few
 * seconds; past `ttlMs` the next refresh counts afresh. Per dashboard, a few hundred filters.
 */
import type { MatchCount } from '../core/search.js';

/** how long a filter's count answers live refreshes */
export const COUNT_TTL_MS = 30_000;
const MAX_FILTERS = 200;

export class CountCache {
  readonly #kept = new Map<string, { count: MatchCount; at: number }>();

  constructor(
    private readonly now: () => number = Date.now,
    private readonly ttlMs = COUNT_TTL_MS,
  ) {}

  /** The filter's count when it was counted within the TTL, else undefined. */
  get(key: string): MatchCount | undefined {
    const hit = this.#kept.get(key);
    if (!hit) return undefined;
    if (this.now() - hit.at < this.ttlMs) return hit.count;
    this.#kept.delete(key);
    return undefined;
  }

  set(key: string, count: MatchCount): void {
    this.#kept.delete(key);
    this.#kept.set(key, { count, at: this.now() });
    // a Map iterates in insertion order: the first key is the longest kept
    if (this.#kept.size > MAX_FILTERS) this.#kept.delete(this.#kept.keys().next().value as string);
  }
}
