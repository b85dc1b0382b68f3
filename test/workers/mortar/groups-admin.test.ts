/**
 * Consumer-group management over HTTP (docs/groups.md) against the real
 * Worker, session, group and partition objects: list, describe, delete
 * (refused with members, forced), reset (earliest / latest / sequence /
 * time, one partition or all; racing a live member's ACKs: the stale ACK is
 * fenced), pause until a time / resume (deliveries stop, heartbeats go on,
 * the pause survives a restart of the objects).
 */
import { SELF, env, runInDurableObject } from "cloudflare:test";
import { nonEmpty, rowsOf } from "../helpers/rows";
import { describe, expect, it } from "vitest";
import { ErrorCode, Op, type MsgFrame } from "../../../wire/mortar";
import { groupStub } from "../../../objects/group/stub";
import { partitionStub } from "../../../objects/partition/stub";
import { registryStub } from "../../../objects/registry/stub";
import type { LookupResult, TopicInfo } from "../../../objects/registry/rpc";
import type { GroupDoc, GroupList, ResetAnswer } from "../../../wire/admin/groups";
import { expectErr, expectOk } from "../helpers/mortar-ws";
import { Peer, closeAndSettle, isAssign, isMsg, isRevoke, text } from "../helpers/peer";

let n = 0;
const unique = (base: string) => `${base}-${++n}-${Math.random().toString(36).slice(2, 8)}`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function topicOf(peer: Peer, name: string, partitions: number): Promise<TopicInfo> {
  const d = await peer.c.declare(name, partitions);
  const r = (await registryStub(env, "default").lookup(d.topicId)) as LookupResult;
  if (!r.ok) throw new Error("lookup failed");
  return r.topic;
}

/** One call to the group API (open broker: tenant default). */
async function api<T = any>(method: string, path: string, body?: unknown): Promise<{ status: number; json: T & { error?: string } }> {
  const res = await SELF.fetch(`http://broker${path}`, { method, body: body === undefined ? undefined : JSON.stringify(body) });
  return { status: res.status, json: (await res.json()) as T & { error?: string } };
}

const groupPath = (topic: string, group: string) => `/v0/topics/${encodeURIComponent(topic)}/groups/${encodeURIComponent(group)}`;

/** Publishes `values` to a partition (one PUB each, answered in order). */
async function publishAll(p: Peer, topicId: number, partition: number, values: string[]): Promise<void> {
  for (const v of values) expectOk(await p.publish(topicId, partition, v), Op.PUB);
}

describe("groups: list and describe", () => {
  it("lists a topic's groups with members, lag and in flight; describes one per partition; 404 for unknown topics and groups", async () => {
    const a = await Peer.open();
    const name = unique("orders/eu");
    const topic = await topicOf(a, name, 2);
    const group = "billing ✓";
    const sub = await a.subscribe(topic.topicId, group, { creditCount: 3 });
    await a.confirm(await a.take(isAssign, 2));
    await publishAll(a, topic.topicId, 0, ["a", "b", "c", "d", "e"]);
    await publishAll(a, topic.topicId, 1, ["x"]);
    const msgs = await a.take(isMsg, 3);
    const first = msgs.filter((m) => m.partition === 0).sort((x, y) => Number(x.sequence - y.sequence))[0]!;
    expectOk(await a.request(a.ackFrame(first)), Op.ACK);
    await a.take(isMsg); // the credit the ACK returned brings one more: 3 in flight

    const list = await api<GroupList>("GET", `/v0/topics/${encodeURIComponent(name)}/groups`);
    expect(list.status).toBe(200);
    expect(list.json).toMatchObject({ tenant: "default", topic: name, topic_id: topic.topicId });
    expect(list.json.groups).toHaveLength(1);
    expect(list.json.groups[0]).toMatchObject({ group, members: 1, paused_until: null, lag: 5, in_flight: 3 });

    const d = await api<GroupDoc>("GET", groupPath(name, group));
    expect(d.status).toBe(200);
    expect(d.json).toMatchObject({
      tenant: "default", topic: name, topic_id: topic.topicId, group, partition_count: 2, start_policy: "earliest", paused_until: null,
      members: [{ member_id: Number(sub.memberId), membership_epoch: sub.membershipEpoch, partitions: [0, 1] }],
      lag: 5, in_flight: 3, dead_lettered: 0,
    });
    const p0 = d.json.partitions[0]!;
    expect(p0).toMatchObject({ partition: 0, owner: Number(sub.memberId), ownership_epoch: 1, revoking: false, committed_floor: 1, high_watermark: 5, lag: 4, reset_pending: null });
    expect(p0.in_flight + d.json.partitions[1]!.in_flight).toBe(3);
    expect(d.json.partitions[1]).toMatchObject({ partition: 1, high_watermark: 1, committed_floor: 0, lag: 1 });

    expect((await api("GET", groupPath(name, "nobody"))).json.error).toBe('consumer group "nobody" does not exist');
    expect((await api("GET", groupPath(name, "nobody"))).status).toBe(404);
    const unknown = await api("GET", `/v0/topics/${unique("missing")}/groups`);
    expect([unknown.status, unknown.json.error]).toEqual([404, expect.stringMatching(/^topic ".*" does not exist$/)]);
    expect((await api("GET", groupPath(name, "x".repeat(256)))).status).toBe(400);
    await closeAndSettle(groupStub(env, "default", topic.incarnation, topic.topicId, group), [a]);
  });
});

describe("groups: names in the path", () => {
  it("a path segment that is not valid UTF-8 percent-encoding is 400, never another topic's name taken literally", async () => {
    const a = await Peer.open();
    const literal = `%FF${unique("pct")}`; // a valid topic name that looks like an escape
    const topic = await topicOf(a, literal, 1);
    const ok = await api<GroupList>("GET", `/v0/topics/${encodeURIComponent(literal)}/groups`);
    expect([ok.status, ok.json.topic]).toEqual([200, literal]);
    const raw = await api("GET", `/v0/topics/${literal}/groups`); // %FF: not UTF-8
    expect([raw.status, raw.json.error]).toEqual([400, "topic in the path is not valid percent-encoding of UTF-8"]);
    const group = await api("GET", `/v0/topics/${encodeURIComponent(literal)}/groups/%E2%82`);
    expect([group.status, group.json.error]).toEqual([400, "group in the path is not valid percent-encoding of UTF-8"]);
    // the console's topic routes too
    const detail = await api("GET", `/v0/topics/${literal}`);
    expect([detail.status, detail.json.error]).toEqual([400, "topic in the path is not valid percent-encoding of UTF-8"]);
    expect((await api("GET", `/v0/topics/${encodeURIComponent(literal)}`)).status).toBe(200);
    expect((await api("DELETE", `/v0/topics/${literal}`)).status).toBe(400);
    expect((await api("GET", `/v0/topics/${encodeURIComponent(literal)}`)).status).toBe(200); // not deleted
    expect(topic.topicId).toBeGreaterThan(0);
    a.close();
  });
});

describe("groups: delete", () => {
  it("is refused while the group has members; force removes them as a session timeout would; the name then starts afresh", async () => {
    const a = await Peer.open();
    const name = unique("del");
    const topic = await topicOf(a, name, 2);
    const stub = groupStub(env, "default", topic.incarnation, topic.topicId, "g");
    const sub = await a.subscribe(topic.topicId, "g");
    const assigned = await a.take(isAssign, 2);
    await a.confirm(assigned);
    await publishAll(a, topic.topicId, 0, ["one", "two"]);
    for (const m of await a.take(isMsg, 2)) expectOk(await a.request(a.ackFrame(m)), Op.ACK);

    const refused = await api("DELETE", groupPath(name, "g"));
    expect(refused.status).toBe(409);
    expect(refused.json.error).toMatch(/^consumer group "g" has 1 member: stop them first, or delete with force/);
    expect((await api<GroupDoc>("GET", groupPath(name, "g"))).json.members).toHaveLength(1);

    const forced = await api("DELETE", `${groupPath(name, "g")}?force=1`);
    expect(forced).toEqual({ status: 200, json: { tenant: "default", topic: name, group: "g", deleted: true, removed_members: 1 } });
    // The member was removed: its session was told, its HEARTBEAT is refused.
    expectErr(await a.request(a.heartbeatFrame(sub, assigned[0]!.assignmentEpoch)), ErrorCode.STALE_MEMBERSHIP_EPOCH, Op.HEARTBEAT);
    expect((await api("GET", groupPath(name, "g"))).status).toBe(404);
    expect((await api<GroupList>("GET", `/v0/topics/${name}/groups`)).json.groups).toEqual([]);
    expect(await registryStub(env, "default").groupNames(topic.incarnation, topic.topicId)).toEqual([]);
    for (const p of [0, 1]) expect((await partitionStub(env, "default", topic.incarnation, topic.topicId, p).info()).groups).toEqual([]);
    // Nothing is left but the counters the next group of the name continues (member ids, epochs, notice ids).
    expect(nonEmpty(await rowsOf(stub))).toEqual({ group_meta: 4 });
    expect((await api("DELETE", groupPath(name, "g"))).status).toBe(404);

    // A new SUB under the name is a new group: EARLIEST from the first record again; the removed
    // member's ids are never handed out again, so its session's late LEAVE cannot remove the new member.
    const b = await Peer.open();
    const sb = await b.subscribe(topic.topicId, "g");
    expect(sb.memberId).toBeGreaterThan(sub.memberId);
    expect(sb.membershipEpoch).toBeGreaterThan(sub.membershipEpoch);
    await stub.leave(Number(sub.memberId), sub.membershipEpoch);
    expect((await stub.info()).members.map((m) => m.memberId)).toEqual([Number(sb.memberId)]);
    await b.confirm(await b.take(isAssign, 2));
    expect((await b.take(isMsg, 2)).map((m) => [text(m), m.attempt, m.ownershipEpoch])).toEqual([["one", 1, 1n], ["two", 1, 1n]]);
    await closeAndSettle(stub, [a, b]);
    expect(await api("DELETE", groupPath(name, "g"))).toMatchObject({ status: 200, json: { removed_members: 0 } });
  });
});

describe("groups of a deleted topic", () => {
  it("are purged with it: the member's next HEARTBEAT is refused and the group object is empty", async () => {
    const a = await Peer.open();
    const name = unique("gone");
    const topic = await topicOf(a, name, 1);
    const sub = await a.subscribe(topic.topicId, "g");
    const [asg] = await a.take(isAssign);
    await a.confirm([asg!]);
    expect(await registryStub(env, "default").groupNames(topic.incarnation, topic.topicId)).toEqual(["g"]);
    a.send([{ op: Op.DECLARE, topic: new TextEncoder().encode(name), partitionCount: 0, flags: 1 }]);
    expectOk((await a.answer(1))[0], Op.DECLARE);
    const stub = groupStub(env, "default", topic.incarnation, topic.topicId, "g");
    for (let i = 0; i < 100 && (await registryStub(env, "default").groupNames(topic.incarnation, topic.topicId)).length > 0; i++) await sleep(20);
    expect(await registryStub(env, "default").groupNames(topic.incarnation, topic.topicId)).toEqual([]);
    expect((await stub.info()).members).toEqual([]);
    expectErr(await a.request(a.heartbeatFrame(sub, asg!.assignmentEpoch)), ErrorCode.STALE_MEMBERSHIP_EPOCH, Op.HEARTBEAT);
    expect(nonEmpty(await rowsOf(stub))).toEqual({});
    a.close();
  });
});

describe("groups: reset", () => {
  it("without members: earliest, latest, sequence (clamped), time; one partition or all; bad input is 400", async () => {
    const a = await Peer.open();
    const name = unique("reset");
    const topic = await topicOf(a, name, 2);
    const stub = groupStub(env, "default", topic.incarnation, topic.topicId, "r");
    await a.subscribe(topic.topicId, "r");
    await a.confirm(await a.take(isAssign, 2));
    await publishAll(a, topic.topicId, 0, ["1", "2", "3"]);
    await sleep(30);
    const between = new Date(Date.now()).toISOString();
    await sleep(30);
    await publishAll(a, topic.topicId, 0, ["4", "5"]);
    for (const m of await a.take(isMsg, 5)) expectOk(await a.request(a.ackFrame(m)), Op.ACK);
    await closeAndSettle(stub, [a]);
    const path = `${groupPath(name, "r")}/reset`;
    const floors = async () => (await api<GroupDoc>("GET", groupPath(name, "r"))).json.partitions.map((p) => [p.committed_floor, p.lag]);
    expect(await floors()).toEqual([[5, 0], [0, 0]]);

    let r = await api<ResetAnswer>("POST", path, { to: "earliest" });
    expect(r).toEqual({ status: 200, json: { tenant: "default", topic: name, group: "r", to: "earliest", partitions: [
      { partition: 0, next_sequence: 1, committed_floor: 0, pending: false }, { partition: 1, next_sequence: 1, committed_floor: 0, pending: false },
    ] } });
    expect(await floors()).toEqual([[0, 5], [0, 0]]);
    r = await api<ResetAnswer>("POST", path, { to: `time:${between}` });
    expect(r.json.partitions.map((p) => p.next_sequence)).toEqual([4, 1]);
    expect(await floors()).toEqual([[3, 2], [0, 0]]);
    r = await api<ResetAnswer>("POST", path, { to: "sequence:2", partition: 0 });
    expect(r.json).toMatchObject({ to: "sequence:2", partitions: [{ partition: 0, next_sequence: 2, committed_floor: 1 }] });
    expect(await floors()).toEqual([[1, 4], [0, 0]]);
    r = await api<ResetAnswer>("POST", path, { to: "sequence:99" });
    expect(r.json.partitions.map((p) => p.next_sequence)).toEqual([6, 1]); // clamped to the newest + 1
    r = await api<ResetAnswer>("POST", path, { to: "time:2000-01-01T00:00:00Z", partition: 0 });
    expect(r.json.partitions.map((p) => p.next_sequence)).toEqual([1]);
    r = await api<ResetAnswer>("POST", path, { to: "latest" });
    expect(r.json.partitions.map((p) => p.committed_floor)).toEqual([5, 0]);
    expect(await floors()).toEqual([[5, 0], [0, 0]]);

    for (const [body, re] of [
      [{ to: "yesterday" }, /^to: must be earliest, latest, sequence:N or time:ISO8601, not "yesterday"$/],
      [{ to: "sequence:0" }, /sequence must be a whole number ≥ 1/],
      [{ to: "time:2026-01-01" }, /time must be an ISO 8601 date-time with a time zone/],
      [{ to: "earliest", partition: 2 }, /^partition 2 is out of range: the topic has 2 partitions$/],
      [{ to: "earliest", extra: 1 }, /^extra: unknown field \(the body takes to, partition\)$/],
      [{}, /^to: /],
    ] as const) {
      const bad = await api("POST", path, body);
      expect([bad.status, bad.json.error]).toEqual([400, expect.stringMatching(re)]);
    }
    expect((await api("POST", `${groupPath(name, "none")}/reset`, { to: "earliest" })).status).toBe(404);
  });

  it("with a live member: REVOKE, then the fence brings the new position; an ACK racing the fence is OK or stale, never moves the new position", async () => {
    const a = await Peer.open();
    const name = unique("race");
    const topic = await topicOf(a, name, 1);
    const stub = groupStub(env, "default", topic.incarnation, topic.topicId, "live");
    await a.subscribe(topic.topicId, "live", { creditCount: 10 });
    await a.confirm(await a.take(isAssign));
    await publishAll(a, topic.topicId, 0, ["1", "2", "3", "4", "5", "6"]);
    const held = await a.take(isMsg, 6);
    for (const m of held.slice(0, 3)) expectOk(await a.request(a.ackFrame(m)), Op.ACK);

    const r = await api<ResetAnswer>("POST", `${groupPath(name, "live")}/reset`, { to: "sequence:2" });
    expect(r.json.partitions).toEqual([{ partition: 0, next_sequence: 2, committed_floor: 1, pending: true }]);
    const [revoke] = await a.take(isRevoke);
    expect((await api<GroupDoc>("GET", groupPath(name, "live"))).json.partitions[0]).toMatchObject({ revoking: true, reset_pending: 2, committed_floor: 3 });
    // Still before the fence: an ACK under the old epoch is accepted (it settles the old position, which the reset drops).
    expectOk(await a.request(a.ackFrame(held[3]!)), Op.ACK);
    // The CONTROL_ACK and an ACK race: the session sends the ACK to the partition and the CONTROL_ACK to the group at once.
    a.send([a.controlAckFrame(revoke!), a.ackFrame(held[4]!)]);
    const [confirmed, raced] = await a.answer(2);
    expectOk(confirmed, Op.CONTROL_ACK);
    if (raced!.op === Op.ERR) expectErr(raced, ErrorCode.STALE_OWNERSHIP_EPOCH, Op.ACK);
    else expectOk(raced, Op.ACK);
    const [assign] = await a.take(isAssign);
    expect(assign!.ownershipEpoch).toBe(2n);
    await a.confirm([assign!]);
    // After the fence every ACK under epoch 1 is stale.
    expectErr(await a.request(a.ackFrame(held[5]!)), ErrorCode.STALE_OWNERSHIP_EPOCH, Op.ACK);
    // Deliveries restart at the new position, under the new epoch, as first attempts.
    const again = await a.take(isMsg, 5);
    expect(again.map((m: MsgFrame) => [text(m), Number(m.sequence), m.ownershipEpoch, m.attempt])).toEqual(
      [2, 3, 4, 5, 6].map((s) => [String(s), s, 2n, 1]));
    const d = (await api<GroupDoc>("GET", groupPath(name, "live"))).json.partitions[0]!;
    expect(d).toMatchObject({ committed_floor: 1, next_sequence: 7, in_flight: 5, revoking: false, reset_pending: null, ownership_epoch: 2 });
    for (const m of again) expectOk(await a.request(a.ackFrame(m)), Op.ACK);
    expect((await api<GroupDoc>("GET", groupPath(name, "live"))).json.partitions[0]).toMatchObject({ committed_floor: 6, lag: 0, in_flight: 0 });
    await closeAndSettle(stub, [a]);
  }, 20_000);
});

describe("groups: pause and resume", () => {
  it("pause stops deliveries (heartbeats go on), survives a restart of the objects, and ends by itself or on resume", async () => {
    const a = await Peer.open();
    const name = unique("pause");
    const topic = await topicOf(a, name, 1);
    const stub = groupStub(env, "default", topic.incarnation, topic.topicId, "p");
    const sub = await a.subscribe(topic.topicId, "p");
    const [asg] = await a.take(isAssign);
    await a.confirm([asg!]);
    const until = new Date(Date.now() + 60_000).toISOString();
    const paused = await api<GroupDoc>("POST", `${groupPath(name, "p")}/pause`, { until });
    expect(paused.status).toBe(200);
    expect(paused.json.paused_until).toBe(new Date(Date.parse(until)).toISOString());
    await publishAll(a, topic.topicId, 0, ["held"]);
    expect(await a.peek(isMsg, 300)).toEqual([]);
    expectOk(await a.request(a.heartbeatFrame(sub, asg!.assignmentEpoch)), Op.HEARTBEAT);
    expect((await api<GroupList>("GET", `/v0/topics/${name}/groups`)).json.groups[0]).toMatchObject({ members: 1, paused_until: paused.json.paused_until, lag: 1 });

    // Both objects restart: the pause is stored in each.
    const part = partitionStub(env, "default", topic.incarnation, topic.topicId, 0);
    for (const s of [stub, part] as DurableObjectStub[]) await runInDurableObject(s, (_o, state) => state.abort("restart")).catch(() => {});
    expect((await api<GroupDoc>("GET", groupPath(name, "p"))).json).toMatchObject({ paused_until: paused.json.paused_until, members: [{ member_id: Number(sub.memberId) }] });
    await publishAll(a, topic.topicId, 0, ["held too"]);
    expect(await a.peek(isMsg, 300)).toEqual([]);

    const resumed = await api<GroupDoc>("POST", `${groupPath(name, "p")}/resume`);
    expect(resumed.json.paused_until).toBeNull();
    expect((await a.take(isMsg, 2)).map(text)).toEqual(["held", "held too"]);

    // A short pause ends by itself (the partition's alarm wakes the owner).
    const short = await api<GroupDoc>("POST", `${groupPath(name, "p")}/pause`, { until: new Date(Date.now() + 700).toISOString() });
    expect(short.json.paused_until).not.toBeNull();
    await publishAll(a, topic.topicId, 0, ["later"]);
    expect(await a.peek(isMsg, 200)).toEqual([]);
    const [later] = await a.take(isMsg, 1, 5000);
    expect(text(later!)).toBe("later");
    expect((await api<GroupDoc>("GET", groupPath(name, "p"))).json.paused_until).toBeNull();

    for (const [body, re] of [
      [{ until: "2001-01-01T00:00:00Z" }, /^until: 2001-01-01T00:00:00.000Z is not in the future \(resume instead\)$/],
      [{ until: "soon" }, /^until: must be an ISO 8601 date-time/],
      [{}, /^until: /],
    ] as const) {
      const bad = await api("POST", `${groupPath(name, "p")}/pause`, body);
      expect([bad.status, bad.json.error]).toEqual([400, expect.stringMatching(re)]);
    }
    await closeAndSettle(groupStub(env, "default", topic.incarnation, topic.topicId, "p"), [a]); // a new stub: the old one saw its object reset
  }, 20_000);
});
