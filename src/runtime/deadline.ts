/**
 * Waiting on the database with a deadline. A call that never answers (a pool with no free
 * connection, a server that stopped responding) must not stall the loops that keep the
 * guarantees: shutdown, lease renewal. The call itself is not cancelled, only no longer waited for.
 */

/** `p`'s value if it resolves by `at` (Date.now() ms), else `late`; a rejection propagates. */
export function resolvedBy<T, L>(p: Promise<T>, at: number, late: L): Promise<T | L> {
  return resolvedWithin(p, at - Date.now(), late);
}

/** `p`'s value if it resolves within `ms`, else `late`; a rejection propagates. */
export function resolvedWithin<T, L>(p: Promise<T>, ms: number, late: L): Promise<T | L> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<L>((r) => (timer = setTimeout(() => r(late), Math.max(0, ms))));
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}

/** Whether `p` settles (resolves or rejects) by `at` (Date.now() ms). */
export function settlesBy(p: Promise<unknown>, at: number): Promise<boolean> {
  return resolvedBy(
    p.then(
      () => true,
      () => true,
    ),
    at,
    false,
  );
}
