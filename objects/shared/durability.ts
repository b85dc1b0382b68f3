/**
 * Where a committed write lives, for the PUB result's `durability` field
 * (DESIGN.md §4: report what is true where the broker runs).
 *
 * Deployed Durable Objects commit to Cloudflare's replicated storage before
 * the output gate releases a reply; their `getCurrentBookmark()` names a
 * position in that replicated log and ends in a hash of it, e.g.
 * `0000007b-0000b26e-00001538-0c3e87bb37b3db5cc52eedb93cd3b96b`. Local
 * workerd (`wrangler dev`, the vitest pool) keeps a single SQLite file and
 * answers a commit counter with an all-zero hash, e.g.
 * `00000000-00000002-00000000-00000000000000000000000000000000` — the counter
 * is non-zero as soon as the object has committed anything, so only the
 * hash tells the two apart. All-zero hash (or unsupported) → LOCAL (1),
 * otherwise REPLICATED (2).
 */
import { Durability } from "../../wire/mortar/constants";

/** The part of DurableObjectStorage used here (kept structural so Node unit tests can import this module). */
interface DurableObjectStorageLike {
  getCurrentBookmark(): Promise<string>;
}

/** Durability for a bookmark string: LOCAL when its last (hash) part is all zeros. */
export function durabilityOfBookmark(bookmark: string): number {
  const hash = bookmark.slice(bookmark.lastIndexOf("-") + 1);
  return /^0*$/.test(hash) ? Durability.LOCAL : Durability.REPLICATED;
}

/** Detects the durability level of `storage` (async: reads the current bookmark once). */
export async function detectDurability(storage: DurableObjectStorageLike): Promise<number> {
  try {
    return durabilityOfBookmark(await storage.getCurrentBookmark());
  } catch {
    return Durability.LOCAL;
  }
}
