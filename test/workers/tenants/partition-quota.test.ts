/**
 * The per-tenant partition quota (issue 28 item 1; docs/tenants.md "Default
 * limits"): a DECLARE that would take a tenant's topics past its
 * `partitions` quota is refused with QUOTA_EXCEEDED 0x4002 and creates
 * nothing; existing topics stay usable; a delete frees the partitions; the
 * console's create answers 429; other tenants are not affected.
 */
import { SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { DeclareCreated, DeclareFlags, ErrorCode, Op, decodeDeclareResult, utf8Bytes } from "../../../wire/mortar";
import { expectErr, expectOk, pubResult } from "../helpers/mortar-ws";
import { Peer } from "../helpers/peer";
import { setQuotas, tenantWithToken } from "./helpers";

const declare = (p: Peer, name: string, n: number, flags = 0) => p.request({ op: Op.DECLARE, topic: utf8Bytes(name), partitionCount: n, flags });
const text = (b: Uint8Array) => new TextDecoder().decode(b);

describe("partition quota", () => {
  it("a DECLARE past the tenant's partitions is QUOTA_EXCEEDED and creates nothing; existing topics and other tenants are unaffected", async () => {
    const a = await tenantWithToken("parts", { partitions: 10 });
    const b = await tenantWithToken("parts-b", { partitions: 10 });
    const pa = await Peer.open(a.token);
    const pb = await Peer.open(b.token);
    expectOk(await declare(pa, "six", 6), Op.DECLARE);
    const refused = expectErr(await declare(pa, "five", 5), ErrorCode.QUOTA_EXCEEDED, Op.DECLARE);
    expect(text(refused.message)).toBe(
      `partition quota exceeded: the tenant's topics have 6 partitions, quota 10; topic "five" with 5 partitions was not created (delete topics or raise the partitions quota)`);
    expectOk(await declare(pa, "four", 4), Op.DECLARE); // exactly the quota
    expectOk(await declare(pa, "six", 6), Op.DECLARE); // an existing topic: idempotent, not counted again
    expect(pubResult(await pa.publish(1, 5, "still writable")).sequence).toBe(1n);
    expectErr(await declare(pa, "one", 1), ErrorCode.QUOTA_EXCEEDED, Op.DECLARE);

    // the other tenant has its own count
    expectOk(await declare(pb, "six", 6), Op.DECLARE);
    expectOk(await declare(pb, "four", 4), Op.DECLARE);

    // a delete frees its partitions; a raised quota admits more
    expectOk(await declare(pa, "six", 0, DeclareFlags.DELETE), Op.DECLARE);
    expect(decodeDeclareResult(expectOk(await declare(pa, "five", 5), Op.DECLARE).result).created).toBe(DeclareCreated.CREATED); // the refused DECLARE created nothing
    expectErr(await declare(pa, "two", 2), ErrorCode.QUOTA_EXCEEDED, Op.DECLARE);
    await setQuotas(a.tenant, { partitions: 11 });
    expectOk(await declare(pa, "two", 2), Op.DECLARE);
    pa.close();
    pb.close();
  });

  it("the console's topic create answers 429 with the same message", async () => {
    const { token } = await tenantWithToken("parts-http", { partitions: 3 });
    const create = (name: string, partitions: number) => SELF.fetch("http://broker/v0/topics", {
      method: "POST", body: JSON.stringify({ name, partitions }), headers: { Authorization: `Bearer ${token}`, "content-type": "application/json" },
    });
    expect((await create("three", 3)).status).toBe(201);
    const r = await create("more", 1);
    expect(r.status).toBe(429);
    expect(await r.json()).toEqual({
      code: ErrorCode.QUOTA_EXCEEDED,
      error: `partition quota exceeded: the tenant's topics have 3 partitions, quota 3; topic "more" with 1 partition was not created (delete topics or raise the partitions quota)`,
    });
  });
});
