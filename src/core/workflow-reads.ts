/**
 * Which jobs of a workflow a bounded read shows: breadth first from the job asked about, so a
 * capped read keeps the jobs nearest it. Pure; memory and MySQL (which cannot stop a recursive
 * read early) choose with it from the edges they read.
 */

/** The jobs nearest `start` through `edges` either way, at most `limit` (start first, then by distance), and whether more were reachable. */
export function nearestJobs(start: string, edges: readonly (readonly [string, string])[], limit: number): { ids: string[]; capped: boolean } {
  const near = new Map<string, string[]>();
  const link = (a: string, b: string) => {
    const list = near.get(a);
    if (list) list.push(b);
    else near.set(a, [b]);
  };
  for (const [parent, child] of edges) {
    link(parent, child);
    link(child, parent);
  }
  const ids = [start];
  const seen = new Set(ids);
  for (let at = 0; at < ids.length; at++) {
    for (const next of near.get(ids[at]!) ?? []) {
      if (seen.has(next)) continue;
      if (ids.length >= limit) return { ids, capped: true };
      seen.add(next);
      ids.push(next);
    }
  }
  return { ids, capped: false };
}

/** The edges whose both ends are among `ids`, in parent then child id order. */
export function edgesWithin(ids: readonly string[], edges: readonly (readonly [string, string])[]): [string, string][] {
  const inside = new Set(ids);
  const out = edges.filter(([p, c]) => inside.has(p) && inside.has(c)).map(([p, c]) => [p, c] as [string, string]);
  return out.sort((a, b) => Number(a[0]) - Number(b[0]) || Number(a[1]) - Number(b[1]));
}
