/**
 * A mailbox's existence reaches the counting pipeline at once (#14 item 3):
 * the CREATE and the TTL purge each report right away (in this project the
 * flush interval is the default 10 s, so a report that waited for it would
 * arrive only then). This is what lets a mailbox that was only created go
 * idle — and be evicted — ~10 s after its CREATE instead of ~20 s, and the
 * tenant's mailbox count see a new or expired mailbox promptly.
 */
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { usageStub } from "../../objects/usage/stub";
import { series } from "../../objects/usage/catalog";
import { OPEN_TENANT } from "../../objects/tenants/auth";
import { freshAddress, mq9 } from "./mq9-helpers";

const MAILBOXES = series("mortarmq_mq9_mailboxes");
const gauge = () => usageStub(env, OPEN_TENANT).seriesValue(MAILBOXES);

/** Polls `read` every 100 ms until it returns `want` or `ms` pass; the last value read. */
async function until(read: () => Promise<number>, want: number, ms: number): Promise<number> {
  const end = Date.now() + ms;
  let v = await read();
  while (v !== want && Date.now() < end) {
    await new Promise((r) => setTimeout(r, 100));
    v = await read();
  }
  return v;
}

describe("mailbox existence in the counting pipeline", { timeout: 30_000 }, () => {
  it("a CREATE is in the tenant's mailbox gauge within 3 s, an expired mailbox leaves it within 3 s of its expiry", async () => {
    const before = await gauge();
    const name = freshAddress("rep");
    expect((await mq9("$mq9.AI.MAILBOX.CREATE", { name, ttl: 1 })).status).toBe(200);
    expect(await until(gauge, before + 1, 3_000)).toBe(before + 1); // a 10 s flush interval would not have reported yet
    expect(await until(gauge, before, 4_000)).toBe(before); // expires at 1 s, purged by its alarm, reported at once
  });
});
