/**
 * The tenant's mailbox count is exact (docs/mq9.md "The tenant's mailbox
 * count", docs/tenants.md "Default limits": `mailboxes` "exact (the tenant's
 * mailbox index)"), also when the index's expiry alarm runs between a
 * CREATE's admission and its row write.
 *
 * A CREATE of an address that is listed is admitted without a reservation
 * ("an address that is listed ... takes no second slot"). When that row's
 * TTL ends before the CREATE writes its row, the alarm deletes the row and
 * frees its slot; another CREATE takes it, and the first CREATE then writes
 * its row too (the old one is gone): one mailbox over the quota.
 * (Found by the attack-lazy tester; the window is the two RPCs of a CREATE
 * — TenantDirectory.admitMailbox → MailboxIndex.admit, then
 * MailboxIndex.create — which a loaded broker stretches to tens of ms.)
 */
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { Env } from "../../objects/env";
import { mailboxIndexStub } from "../../objects/mailbox-index/stub";

const testEnv = env as unknown as Env;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("mailbox index: the quota count against the expiry alarm", () => {
  it("a CREATE admitted while its address was listed, written after the row expired, does not take the tenant past its quota", async () => {
    const index = mailboxIndexStub(testEnv, "quota-race");
    const max = 2;
    expect(await index.create("qr.keep", 0)).toMatchObject({ ok: true });
    expect(await index.create("qr.x", 1)).toMatchObject({ ok: true }); // expires in 1 s
    expect(await index.count()).toBe(2);

    // CREATE qr.x again, just before its TTL ends: admitted, no slot reserved (the address is listed)
    expect(await index.admit("qr.x", max)).toEqual({ ok: true });

    // the index's alarm deletes the expired row before that CREATE writes its row
    for (let i = 0; i < 100 && (await index.count()) !== 1; i++) await sleep(50);
    expect(await index.count()).toBe(1);

    // another CREATE takes the slot the expiry freed
    const other = await index.admit("qr.y", max);
    expect(other.ok).toBe(true);
    expect(await index.create("qr.y", 0)).toMatchObject({ ok: true });

    // the first CREATE now writes its row
    const late = await index.create("qr.x", 0);
    // exact quota: either the late CREATE is refused, or the second admission was
    const created = (other.ok ? 1 : 0) + (late.ok ? 1 : 0);
    expect(await index.count()).toBe(1 + created);
    expect(await index.count()).toBeLessThanOrEqual(max); // fails: 3 mailboxes under a quota of 2
  });
});
