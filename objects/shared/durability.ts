/**
 * Where a committed write lives, for the PUB result's `durability` field
 * (DESIGN.md §4: report what is true where the broker runs).
 *
 * Deployed Durable Objects commit to Cloudflare's replicated storage before
 * the output gate releases a reply; their `getCurrentBookmark()` returns a
 * real position in that replicated log. Local workerd (`wrangler dev`, the
 * vitest pool) keeps a single SQLite file and answers with an all-zero
 * bookmark. So: all-zero (or unsupported) → LOCAL (1), otherwise REPLICATED (2).
 */
import { Durability } from "../../wire/mortar/constants";

/** Detects the durability level of `storage` (async: reads the current bookmark once). */
export async function detectDurability(storage: DurableObjectStorage): Promise<number> {
  try {
    const bookmark = await storage.getCurrentBookmark();
    return /^[0-]*$/.test(bookmark) ? Durability.LOCAL : Durability.REPLICATED;
  } catch {
    return Durability.LOCAL;
  }
}
