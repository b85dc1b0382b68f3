/**
 * Objects started by their own alarm (after a runtime restart or an
 * eviction) get no `ctx.id.name`; named calls afterwards reach that same
 * instance. The Partition and the ConsumerGroup must still know who they
 * are (objects/shared/object-name.ts). Short timers: vitest.config.ts
 * "workers-timers" (ack wait 500 ms, revocation timeout 600 ms).
 */
import { env, runInDurableObject } from "cloudflare:test";
import { expect, it } from "vitest";
import { Op } from "../../../wire/mortar";
import { groupStub } from "../../../objects/group/stub";
import { partitionStub } from "../../../objects/partition/stub";
import { registryStub } from "../../../objects/registry/stub";
import type { LookupResult, TopicInfo } from "../../../objects/registry/rpc";
import { expectOk } from "../helpers/mortar-ws";
import { Peer, closeAndSettle, isAssign, isMsg, isRevoke, text, type Sub } from "../helpers/peer";

let n = 0;
const unique = (base: string) => `${base}-${++n}-${Math.random().toString(36).slice(2, 8)}`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function topic(p: Peer, partitions: number): Promise<TopicInfo> {
  const d = await p.c.declare(unique("ar"), partitions);
  const r = (await registryStub(env, "default").lookup(d.topicId)) as LookupResult;
  if (!r.ok) throw new Error("lookup");
  return r.topic;
}

/** Drops the object's instance; its next event (here: its alarm) starts a new one. `stub` is unusable afterwards. */
async function evict(stub: DurableObjectStub): Promise<void> {
  await runInDurableObject(stub, (_o, state) => state.abort("evicted by the test")).catch(() => {});
}

/** Heartbeats `s` every 200 ms until `pred` holds for the pushes of `p` (at most `ms`). */
async function heartbeatUntil(p: Peer, s: Sub, epoch: () => number, ms: number, pred: () => boolean): Promise<void> {
  const end = Date.now() + ms;
  while (!pred() && Date.now() < end) {
    await sleep(200);
    expectOk(await p.request(p.heartbeatFrame(s, epoch())), Op.HEARTBEAT);
  }
}

it("a Partition started by its deadline alarm redelivers to its consumer and keeps serving it", async () => {
  const p = await Peer.open();
  const t = await topic(p, 1);
  const s = await p.subscribe(t.topicId, "g");
  const [asg] = await p.take(isAssign);
  await p.confirm([asg!]);
  expectOk(await p.publish(t.topicId, 0, "a"), Op.PUB);
  const [first] = await p.take(isMsg);
  await evict(partitionStub(env, "default", t.incarnation, t.topicId, 0));
  // The 500 ms work deadline fires the alarm of an instance started without a name.
  await heartbeatUntil(p, s, () => asg!.assignmentEpoch, 4000, () => p.pushes.some(isMsg));
  const [again] = await p.take(isMsg, 1, 100);
  expect([text(again!), again!.sequence, again!.attempt]).toEqual(["a", first!.sequence, 2]);
  expectOk(await p.request(p.ackFrame(again!)), Op.ACK);
  expectOk(await p.publish(t.topicId, 0, "b"), Op.PUB);
  const [next] = await p.take(isMsg);
  expect([text(next!), next!.attempt]).toEqual(["b", 1]);
  expectOk(await p.request(p.ackFrame(next!)), Op.ACK);
  await closeAndSettle(groupStub(env, "default", t.incarnation, t.topicId, "g"), [p]);
}, 15_000);

it("a ConsumerGroup started by its revocation-timeout alarm fences and assigns the partition", async () => {
  const a = await Peer.open();
  const t = await topic(a, 2);
  await a.subscribe(t.topicId, "g");
  const asgA = await a.take(isAssign, 2);
  await a.confirm(asgA);
  const b = await Peer.open();
  await b.subscribe(t.topicId, "g");
  const [rev] = await a.take(isRevoke); // never confirmed: forced after 600 ms
  await evict(groupStub(env, "default", t.incarnation, t.topicId, "g"));
  const [asgB] = await b.take(isAssign, 1, 3000); // within the 1.5 s session timeout: no heartbeats needed
  expect([asgB!.partition, asgB!.ownershipEpoch]).toEqual([rev!.partition, 2n]);
  const group = groupStub(env, "default", t.incarnation, t.topicId, "g"); // a stub of the evicted instance stays broken
  expect((await group.info()).forcedRevocations).toBe(1);
  await closeAndSettle(group, [a, b]);
}, 15_000);
