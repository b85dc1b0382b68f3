/**
 * The tenant's mailbox count is exact (docs/mq9.md "The tenant's mailbox
 * count", docs/tenants.md "Default limits": `mailboxes` "exact (the tenant's
 * mailbox index)"), also when the index's expiry alarm runs between a
 * CREATE's admission and its row write.
 *
 * A CREATE of an address that is listed was admitted without a reservation
 * ("an address that is listed ... takes no second slot"). When that row's
 * TTL ended before the CREATE wrote its row, the alarm deleted the row and
 * freed its slot; another CREATE took it, and the first CREATE then wrote
 * its row too (the old one gone): one mailbox over the quota. Now the
 * listed address is reserved too and counts once its row is gone.
 * (Found by the attack-lazy tester; the window is the two RPCs of a CREATE
 * — TenantDirectory.admitMailbox → MailboxIndex.admit, then
 * MailboxIndex.create — which a loaded broker stretches to tens of ms.)
 */
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { Env } from "../../../objects/env";
import { mailboxIndexStub } from "../../../objects/mailbox-index/stub";

const testEnv = env as unknown as Env;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("mailbox index: the quota count against the expiry alarm", () => {
  it("a CREATE admitted while its address was listed, written after the row expired, does not take the tenant past its quota", async () => {
    const index = mailboxIndexStub(testEnv, "quota-race");
    const max = 2;
    expect(await index.create("qr.keep", 0)).toMatchObject({ ok: true });
    expect(await index.create("qr.x", 1)).toMatchObject({ ok: true }); // expires in 1 s
    expect(await index.count()).toBe(2);

    // CREATE qr.x again, just before its TTL ends: admitted (the address is listed)
    expect(await index.admit("qr.x", max)).toMatchObject({ ok: true });

    // the index's alarm deletes the expired row before that CREATE writes its row
    for (let i = 0; i < 100 && (await index.count()) !== 1; i++) await sleep(50);
    expect(await index.count()).toBe(1);

    // another CREATE asks for the slot the expiry freed: the first CREATE's reservation holds it
    expect(await index.admit("qr.y", max)).toEqual({ ok: false, count: 2 });

    // the first CREATE now writes its row: exactly at the quota
    expect(await index.create("qr.x", 0)).toMatchObject({ ok: true });
    expect(await index.count()).toBe(max); // was 3 mailboxes under a quota of 2
  });
});
