/**
 * Consumer-group management is tenant-scoped (docs/groups.md "Access"): a
 * tenant's token sees and manages only its own groups; the operator names
 * the tenant with ?tenant=; no token is 401.
 */
import { SELF, env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { ErrorCode, Op } from "../../../wire/mortar";
import { groupStub } from "../../../objects/group/stub";
import { registryStub } from "../../../objects/registry/stub";
import type { LookupResult } from "../../../objects/registry/rpc";
import { expectErr } from "../helpers/mortar-ws";
import { Peer, closeAndSettle, isAssign } from "../helpers/peer";
import { ADMIN, tenantWithToken } from "./helpers";

async function call(method: string, path: string, token: string | null): Promise<{ status: number; json: any }> {
  const res = await SELF.fetch(`http://broker${path}`, { method, headers: token === null ? {} : { Authorization: `Bearer ${token}` } });
  return { status: res.status, json: await res.json() };
}

describe("group management access", () => {
  it("own tenant only; the operator with ?tenant=; 401 without a token", async () => {
    const a = await tenantWithToken("ga");
    const b = await tenantWithToken("gb");
    const peer = await Peer.open(a.token);
    const d = await peer.c.declare("jobs", 1);
    const topic = (await registryStub(env, a.tenant).lookup(d.topicId)) as LookupResult;
    if (!topic.ok) throw new Error("lookup");
    await peer.subscribe(d.topicId, "workers");
    await peer.confirm(await peer.take(isAssign));

    const own = await call("GET", "/v0/topics/jobs/groups", a.token);
    expect(own.status).toBe(200);
    expect(own.json).toMatchObject({ tenant: a.tenant, groups: [{ group: "workers", members: 1 }] });
    // Another tenant has no such topic, and may not name tenant A.
    expect((await call("GET", "/v0/topics/jobs/groups", b.token)).json).toEqual({ error: 'topic "jobs" does not exist' });
    expect((await call("DELETE", "/v0/topics/jobs/groups/workers?force=1", b.token)).status).toBe(404);
    const other = await call("DELETE", `/v0/topics/jobs/groups/workers?force=1&tenant=${a.tenant}`, b.token);
    expect([other.status, other.json.error]).toEqual([403, "a tenant token can only read and manage its own tenant"]);
    expect((await call("GET", "/v0/topics/jobs/groups", null)).status).toBe(401);
    const op = await call("GET", `/v0/topics/jobs/groups/workers?tenant=${a.tenant}`, ADMIN);
    expect(op.json).toMatchObject({ tenant: a.tenant, topic: "jobs", group: "workers", members: [{ partitions: [0] }] });
    // Tenant A's own token deletes its group (forced: the member is removed).
    expect((await call("DELETE", "/v0/topics/jobs/groups/workers?force=1", a.token)).json).toMatchObject({ deleted: true, removed_members: 1 });
    expectErr(await peer.request({ op: Op.HEARTBEAT, subscriptionId: 1, memberId: 1n, membershipEpoch: 1, assignmentEpoch: 1, state: 0 }), ErrorCode.STALE_MEMBERSHIP_EPOCH, Op.HEARTBEAT);
    await closeAndSettle(groupStub(env, a.tenant, topic.topic.incarnation, d.topicId, "workers"), [peer]);
  });
});
