/**
 * Mailbox limits (objects/tenants/mailbox-limits.ts; #14 item 3): which
 * limit is in force, the creation bucket's burst,
 * and the CLI's quota flags for them.
 */
import { describe, expect, it } from "vitest";
import {
  CREATE_BURST_S, DEFAULT_MAILBOXES_PER_TENANT, DEFAULT_MAILBOX_CREATES_PER_S, mailboxLimits,
} from "../../objects/tenants/mailbox-limits";
import { RateBucket } from "../../objects/tenants/bucket";
import { mergeQuotas, parseQuota, renderQuotas } from "../../client/cli/admin";
import { UNLIMITED } from "../../wire/admin/tenants";

describe("mailboxLimits", () => {
  const unset = { mailboxes: null, mailbox_creates_per_s: null };
  it("built-in defaults when neither a quota nor a var is set", () => {
    expect(mailboxLimits({}, unset)).toEqual({ createsPerS: DEFAULT_MAILBOX_CREATES_PER_S, maxMailboxes: DEFAULT_MAILBOXES_PER_TENANT });
    expect([DEFAULT_MAILBOX_CREATES_PER_S, CREATE_BURST_S, DEFAULT_MAILBOXES_PER_TENANT]).toEqual([20, 10, 10_000]);
  });
  it("the Worker vars replace the defaults; empty or invalid values keep them", () => {
    expect(mailboxLimits({ MQ9_MAILBOX_CREATES_PER_S: "500", MQ9_MAILBOXES_PER_TENANT: "200000" }, unset)).toEqual({ createsPerS: 500, maxMailboxes: 200_000 });
    expect(mailboxLimits({ MQ9_MAILBOX_CREATES_PER_S: "", MQ9_MAILBOXES_PER_TENANT: "0" }, unset)).toEqual({ createsPerS: 20, maxMailboxes: 10_000 });
    expect(mailboxLimits({ MQ9_MAILBOX_CREATES_PER_S: "fast" }, unset).createsPerS).toBe(20);
  });
  it("a tenant's quota wins over both", () => {
    const vars = { MQ9_MAILBOX_CREATES_PER_S: "500", MQ9_MAILBOXES_PER_TENANT: "200000" };
    expect(mailboxLimits(vars, { mailboxes: 7, mailbox_creates_per_s: 3 })).toEqual({ createsPerS: 3, maxMailboxes: 7 });
    expect(mailboxLimits(vars, { mailboxes: 7, mailbox_creates_per_s: null })).toEqual({ createsPerS: 500, maxMailboxes: 7 });
  });
});

describe("RateBucket with a burst of 10 s", () => {
  it("holds burstS seconds of its rate and refills at the rate", () => {
    const b = new RateBucket(20, null, 0, CREATE_BURST_S);
    let granted = 0;
    while (b.grant(1, 0, 0).msgs === 1) granted++;
    expect(granted).toBe(200);
    expect(b.grant(1, 0, 49).msgs).toBe(0); // 0.98 of a token after 49 ms
    expect(b.grant(1, 0, 50).msgs).toBe(1);
    let later = 0;
    while (b.grant(1, 0, 60_000).msgs === 1) later++;
    expect(later).toBe(200); // never more than the burst, however long it was idle
  });
});

describe("CLI quota flags for the mailbox limits", () => {
  it('"default" resets a mailbox quota to the broker default; "unlimited" is refused for them only', () => {
    expect(parseQuota("--mailboxes", "default", true)).toBeNull();
    expect(() => parseQuota("--mailboxes", "unlimited", true)).toThrow(/broker default and cannot be unlimited/);
    expect(parseQuota("--connections", "unlimited")).toBeNull();
    expect(mergeQuotas({ ...UNLIMITED, mailboxes: 5 }, { mailboxCreatesPerS: "50", mailboxes: "default" })).toEqual({ ...UNLIMITED, mailbox_creates_per_s: 50, mailboxes: null });
  });
  it("shows an unset mailbox quota as the broker default", () => {
    const text = renderQuotas({ ...UNLIMITED, connections: 3 });
    expect(text).toMatch(/mailboxes:\s+broker default/);
    expect(text).toMatch(/mailbox creates per s:\s+broker default/);
    expect(text).toMatch(/partitions:\s+broker default/);
    expect(text).toMatch(/storage bytes:\s+unlimited/);
  });
});
