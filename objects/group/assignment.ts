/**
 * Target partition assignment for a consumer group (DESIGN.md §3 Group),
 * pure: sticky and balanced.
 *
 * Every live member gets ⌊P/n⌋ or ⌈P/n⌉ partitions. A member keeps the
 * partitions it owns now, up to its quota (the +1 quotas go to the members
 * that own the most today, ties by join order), so a rebalance moves as few
 * partitions as possible; the rest go, in partition order, to members below
 * their quota, in join order. Deterministic for the same inputs.
 */

/**
 * @param partitionCount partitions of the topic (P ≥ 0)
 * @param members live member ids in join order
 * @param current owner per partition now (null = unowned); owners that are not in `members` are ignored
 * @returns the owner each partition should have (null only when there are no members)
 */
export function targetAssignment(partitionCount: number, members: readonly number[], current: readonly (number | null)[]): (number | null)[] {
  const target: (number | null)[] = new Array(partitionCount).fill(null);
  const n = members.length;
  if (n === 0) return target;
  const base = Math.floor(partitionCount / n);
  const extra = partitionCount % n;
  const order = new Map(members.map((m, i) => [m, i]));
  const owned = new Map<number, number>(members.map((m) => [m, 0]));
  for (const o of current) if (o !== null && owned.has(o)) owned.set(o, owned.get(o)! + 1);
  const byOwned = [...members].sort((a, b) => owned.get(b)! - owned.get(a)! || order.get(a)! - order.get(b)!);
  const quota = new Map<number, number>(byOwned.map((m, i) => [m, base + (i < extra ? 1 : 0)]));
  const kept = new Map<number, number>(members.map((m) => [m, 0]));
  for (let p = 0; p < partitionCount; p++) {
    const o = current[p] ?? null;
    if (o !== null && quota.has(o) && kept.get(o)! < quota.get(o)!) {
      target[p] = o;
      kept.set(o, kept.get(o)! + 1);
    }
  }
  let i = 0;
  for (let p = 0; p < partitionCount; p++) {
    if (target[p] !== null) continue;
    while (kept.get(members[i % n]!)! >= quota.get(members[i % n]!)!) i++;
    const m = members[i % n]!;
    target[p] = m;
    kept.set(m, kept.get(m)! + 1);
  }
  return target;
}
