/**
 * Pure parts of the tenant directory: constant-time comparison, the issued
 * token format, the publish-rate bucket and the publishing gate.
 */
import { describe, expect, it } from "vitest";
import {
  UNLIMITED, formatIssuedToken, parseIssuedToken, quotasSchema, timingSafeEqualBytes, timingSafeEqualStr, toQuotas, type Quotas,
} from "../../wire/admin/tenants";
import { RateBucket } from "../../objects/tenants/bucket";
import { PublishGate, leaseSize } from "../../objects/tenants/gate";
import type { LeaseAnswer, TenantState } from "../../objects/tenants/rpc";

describe("constant-time comparison", () => {
  it("equal, unequal, different lengths, empty", () => {
    expect(timingSafeEqualStr("secret-token", "secret-token")).toBe(true);
    expect(timingSafeEqualStr("secret-token", "secret-tokeN")).toBe(false);
    expect(timingSafeEqualStr("secret-token", "Secret-token")).toBe(false);
    expect(timingSafeEqualStr("secret", "secret-token")).toBe(false); // a prefix is not equal
    expect(timingSafeEqualStr("secret-token", "secret")).toBe(false);
    expect(timingSafeEqualStr("", "")).toBe(true);
    expect(timingSafeEqualStr("", "x")).toBe(false);
    expect(timingSafeEqualStr("é", "e")).toBe(false); // compared as UTF-8 bytes
    expect(timingSafeEqualBytes(new Uint8Array([1, 2, 3]), new Uint8Array([1, 2, 3]))).toBe(true);
    expect(timingSafeEqualBytes(new Uint8Array([1, 2, 3]), new Uint8Array([1, 2, 3, 0]))).toBe(false); // trailing zero is not padding
  });
});

describe("issued token format", () => {
  it("round-trips tenant and token id; 256-bit secret in base64url", () => {
    const secret = new Uint8Array(32).map((_, i) => i * 7);
    const token = formatIssuedToken("acme-corp_1", "0123456789ab", secret);
    expect(token).toMatch(/^mmq\.acme-corp_1\.0123456789ab\.[A-Za-z0-9_-]{43}$/);
    expect(parseIssuedToken(token)).toEqual({ tenant: "acme-corp_1", tokenId: "0123456789ab" });
  });

  it("anything else is not an issued token", () => {
    for (const t of ["", "static-token", "mmq.acme.0123456789ab", "mmq.ACME.0123456789ab." + "a".repeat(43),
      "mmq.acme.0123456789AB." + "a".repeat(43), "mmq.acme.0123456789ab." + "a".repeat(42), "xmq.acme.0123456789ab." + "a".repeat(43)]) {
      expect(parseIssuedToken(t)).toBeNull();
    }
  });

  it("quotas: absent = unlimited, null = unlimited, non-positive or fractional refused, unknown fields refused", () => {
    expect(toQuotas(quotasSchema.parse({ storage_bytes: 1000, connections: null }))).toEqual({ ...UNLIMITED, storage_bytes: 1000 });
    expect(quotasSchema.safeParse({ mailboxes: 0 }).success).toBe(false);
    expect(quotasSchema.safeParse({ mailboxes: 1.5 }).success).toBe(false);
    expect(quotasSchema.safeParse({ mailboxes: "3" }).success).toBe(false);
    expect(quotasSchema.safeParse({ mailbox: 3 }).success).toBe(false);
  });
});

describe("RateBucket", () => {
  it("holds one second of the rate, grants min(want, available), refills continuously", () => {
    const b = new RateBucket(10, null, 0);
    expect(b.grant(4, 0, 0)).toEqual({ msgs: 4, bytes: Infinity });
    expect(b.grant(100, 0, 0)).toEqual({ msgs: 6, bytes: Infinity });
    expect(b.grant(1, 0, 0)).toEqual({ msgs: 0, bytes: 0 });
    expect(b.grant(100, 0, 500)).toEqual({ msgs: 5, bytes: Infinity }); // 0.5 s at 10/s
    expect(b.grant(100, 0, 60_000)).toEqual({ msgs: 10, bytes: Infinity }); // never above the burst
  });

  it("grants nothing unless every limited dimension has budget", () => {
    const b = new RateBucket(100, 1000, 0);
    expect(b.grant(1, 1000, 0)).toEqual({ msgs: 1, bytes: 1000 });
    expect(b.grant(5, 10, 0)).toEqual({ msgs: 0, bytes: 0 }); // bytes empty: no messages either
    expect(b.grant(5, 10, 100)).toEqual({ msgs: 5, bytes: 10 });
  });

  it("everything granted over T is at most burst + rate × T (many lessees)", () => {
    const b = new RateBucket(50, null, 0);
    let granted = 0;
    for (let t = 0; t <= 10_000; t += 7) for (let lessee = 0; lessee < 5; lessee++) granted += b.grant(3, 0, t).msgs;
    expect(granted).toBeLessThanOrEqual(50 + 50 * 10);
    expect(granted).toBeGreaterThanOrEqual(50 * 10 - 5); // and the rate is actually available
  });
});

function state(q: Partial<Quotas>, extra: Partial<TenantState> = {}): TenantState {
  return { quotas: { ...UNLIMITED, ...q }, storageFull: false, storedBytes: 0, ...extra };
}

describe("PublishGate", () => {
  it("no quota: admits without any call", () => {
    let calls = 0;
    const g = new PublishGate(async () => { calls++; throw new Error("no"); }, state({}), 0);
    for (let i = 0; i < 1000; i++) expect(g.admit(100, i)).toEqual({ ok: true });
    expect(calls).toBe(0);
  });

  it("rate: leases at most one second of the quota, waits for a lease when empty, refuses once the bucket is empty, recovers", async () => {
    const bucket = new RateBucket(20, null, 0);
    let now = 0;
    const leases: number[] = [];
    const lease = async (m: number, b: number): Promise<LeaseAnswer> => {
      leases.push(m);
      return { ...bucket.grant(m, b, now), state: state({ publish_msgs_per_s: 20 }) };
    };
    const g = new PublishGate(lease, state({ publish_msgs_per_s: 20 }), 0, () => now);
    let admitted = 0;
    let refused = 0;
    for (let i = 0; i < 40; i++) {
      const r = await g.admitAsync(10);
      if (r === null) admitted++;
      else {
        refused++;
        expect(r.kind).toBe("rate");
        expect(r.retryAfterMs).toBeGreaterThan(0);
      }
    }
    expect(admitted).toBe(20); // the burst: one second of the rate
    expect(refused).toBe(20);
    expect(Math.min(...leases)).toBeGreaterThanOrEqual(2); // at least a chunk of 1/10 s (2 messages)
    expect(Math.max(...leases)).toBeLessThanOrEqual(20); // at most LEASE_S (1 s) of the quota
    expect(leases.length).toBeLessThanOrEqual(12); // refused without calls once the bucket came back empty
    now = 1000; // a second later the rate allows 20 more
    let again = 0;
    for (let i = 0; i < 25; i++) if ((await g.admitAsync(10)) === null) again++;
    expect(again).toBe(20);
  });

  it("adaptive leases: a steady publisher makes about one lease call per second; what it publishes over T stays within rate × (T + 3 s)", async () => {
    const rate = 1000;
    const bucket = new RateBucket(rate, null, 0);
    let now = 0;
    const calls: number[] = [];
    const lease = async (m: number, b: number): Promise<LeaseAnswer> => {
      calls.push(now);
      return { ...bucket.grant(m, b, now), state: state({ publish_msgs_per_s: rate }) };
    };
    const g = new PublishGate(lease, state({ publish_msgs_per_s: rate }), 0, () => now);
    // 200 msg/s for 20 s (one every 5 ms), under the quota: never refused.
    for (let t = 0; t < 20_000; t += 5) {
      now = t;
      expect(await g.admitAsync(10)).toBeNull();
    }
    const steady = calls.filter((t) => t >= 5_000).length; // after the start-up
    expect(steady).toBeLessThanOrEqual(16); // ≤ ~1 per second over the last 15 s
    // Flat out (over the quota) for T = 10 s: admitted ≤ rate × (T + 3 s).
    let admitted = 0;
    const from = now;
    for (let t = from; t < from + 10_000; t += 0.5) {
      now = t;
      if ((await g.admitAsync(10)) === null) admitted++;
    }
    expect(admitted).toBeLessThanOrEqual(rate * (10 + 3));
    expect(admitted).toBeGreaterThanOrEqual(rate * 9); // and the quota is usable
    expect(leaseSize(rate, 200)).toBe(200);
    expect(leaseSize(rate, 1)).toBe(100); // at least a chunk (1/10 s of the quota)
    expect(leaseSize(rate, 5000)).toBe(1000); // at most a second of the quota
  });

  it("perCaller (a Worker isolate's HTTP requests): each request short of budget makes its own lease call and never waits on another's", async () => {
    // A request whose lease never answers (its invocation ended: workerd cancels it) must not hold up another request.
    const calls: ((a: LeaseAnswer) => void)[] = [];
    const lease = () => new Promise<LeaseAnswer>((resolve) => calls.push(resolve));
    const limited = state({ publish_msgs_per_s: 20 });
    const shared = new PublishGate(lease, limited, 0, () => 0);
    void shared.admitAsync(1);
    void shared.admitAsync(1);
    expect(calls.length).toBe(1); // a session's gate: one call, both wait on it
    calls.length = 0;
    const http = new PublishGate(lease, limited, 0, () => 0, true);
    const stuck = http.admitAsync(1);
    const other = http.admitAsync(1);
    expect(calls.length).toBe(2);
    calls[1]!({ msgs: 2, bytes: 0, state: limited });
    expect(await other).toBeNull(); // admitted while the first call is still out
    let settled = false;
    void stuck.then(() => (settled = true));
    await Promise.resolve();
    expect(settled).toBe(false);
    // no background lease in this mode: an admitted publish that leaves the budget low starts no call
    expect(await http.admitAsync(1)).toBeNull();
    expect(calls.length).toBe(2);
  });

  it("bytes rate: a message larger than one second of the rate goes when a full second is there, and is paid in full", async () => {
    const bucket = new RateBucket(null, 1000, 0);
    let now = 0;
    const g = new PublishGate(async (m, b) => ({ ...bucket.grant(m, b, now), state: state({ publish_bytes_per_s: 1000 }) }), state({ publish_bytes_per_s: 1000 }), 0, () => now);
    expect(await g.admitAsync(5000)).toBeNull(); // full bucket: one second of budget is enough to start
    const first = await g.admitAsync(5000);
    expect(first?.kind).toBe("rate");
    expect(first?.retryAfterMs).toBe(5000); // 4000 bytes of debt + one second
    const admittedAt: number[] = [];
    for (now = 1000; now <= 6000; now += 1000) if ((await g.admitAsync(5000)) === null) admittedAt.push(now);
    expect(admittedAt).toEqual([5000]); // 5000 bytes at 1000 bytes/s: one every 5 s
  });

  it("storage: refuses while full, refreshes the state at most every second while publishing", async () => {
    let full = true;
    let calls = 0;
    const s = () => state({ storage_bytes: 100 }, { storageFull: full, storedBytes: full ? 150 : 50 });
    const g = new PublishGate(async () => { calls++; return { msgs: 0, bytes: 0, state: s() }; }, s(), 0);
    const v = g.admit(10, 10);
    expect(v.ok).toBe(false);
    expect("refuse" in v && v.refuse.kind).toBe("storage");
    expect(calls).toBe(0);
    full = false;
    g.admit(10, 1500); // stale: refresh in the background
    expect(calls).toBe(1);
    await Promise.resolve();
    await Promise.resolve();
    expect(g.admit(10, 1600)).toEqual({ ok: true });
  });

  it("concurrent publishers waiting on one lease each get another try (no spurious refusals)", async () => {
    const bucket = new RateBucket(10, null, 0);
    const g = new PublishGate(async (m, b) => ({ ...bucket.grant(m, b, 0), state: state({ publish_msgs_per_s: 10 }) }), state({ publish_msgs_per_s: 10 }), 0, () => 0);
    const results = await Promise.all(Array.from({ length: 15 }, () => g.admitAsync(1)));
    expect(results.filter((r) => r === null).length).toBe(10);
    expect(results.filter((r) => r?.kind === "rate").length).toBe(5);
  });

  it("fails open when the tenant object cannot be reached", async () => {
    const g = new PublishGate(async () => { throw new Error("unreachable"); }, state({ publish_msgs_per_s: 5 }), 0);
    expect(await g.admitAsync(1)).toBeNull();
  });
});
