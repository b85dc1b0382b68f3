/**
 * Dead-letter transfer to the `.dlq` twin (docs/protocol.md "Dead-letter
 * twins"), driven at the Partition: every dead letter reaches the twin and
 * settles at the source, whatever arrives while a transfer is running.
 */
import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { Op, StartPolicy, decodeDeadLetter } from "../../../wire/mortar";
import type { Partition } from "../../../objects/partition/Partition";
import type { Consumers } from "../../../objects/partition/consumers";
import { SettleKind, type DeliverResult, type OwnerRef } from "../../../objects/partition/rpc";
import { partitionStub } from "../../../objects/partition/stub";
import { registryStub } from "../../../objects/registry/stub";
import type { LookupResult } from "../../../objects/registry/rpc";
import { expectOk } from "../helpers/mortar-ws";
import { Peer } from "../helpers/peer";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("dead-letter transfer", () => {
  it("a REJECT of another group while a transfer awaits the twin is transferred too (the dlq job is not lost)", async () => {
    const p = await Peer.open();
    const d = await p.c.declare(`dlq-${Math.random().toString(36).slice(2, 8)}`, 1);
    const r = (await registryStub(env, "default").lookup(d.topicId)) as LookupResult;
    if (!r.ok) throw new Error("lookup");
    expectOk(await p.publish(d.topicId, 0, "poison"), Op.PUB);
    p.close();
    const stub = partitionStub(env, "default", r.topic.incarnation, d.topicId, 0);
    const twin = partitionStub(env, "default", r.topic.incarnation, d.topicId + 1, 0);
    // Two groups own the partition (owners are sessions with no connection: their wakes are no-ops); each gets "poison".
    const owner = (memberId: number): OwnerRef => ({ sessionId: env.SESSION.newUniqueId().toString(), subscriptionId: 1, memberId });
    const a = owner(1), b = owner(2);
    const got: Record<string, DeliverResult> = {};
    for (const [g, o] of [["a", a], ["b", b]] as const) {
      expect((await stub.assign(g, 1, o, StartPolicy.EARLIEST)).ok).toBe(true);
      got[g] = (await stub.deliver({ group: g, caller: o, ownershipEpoch: 1, maxMsgs: 10, maxBytes: 1 << 20, allowOversize: true, holdMs: 0 })) as DeliverResult;
      expect(Array.from(got[g]!.sequences)).toEqual([1]);
    }
    const reject = (g: "a" | "b", o: OwnerRef) => ({
      group: g, caller: o, kinds: Uint8Array.of(SettleKind.REJECT), sequences: Float64Array.of(1),
      deliveryIds: Float64Array.from(got[g]!.deliveryIds), ownershipEpochs: Float64Array.of(1),
    });
    await runInDurableObject(stub, async (obj: Partition) => {
      const consumers = (obj as unknown as { consumers: Consumers }).consumers;
      expect(Array.from((await consumers.settle(reject("b", b))).codes)).toEqual([0]);
      const running = consumers.runJob("dlq", Date.now()); // moves b's dead letter; awaits the twin
      expect(Array.from((await consumers.settle(reject("a", a))).codes)).toEqual([0]); // a's, meanwhile
      await consumers.runJob("dlq", Date.now()); // finds a transfer running
      await running;
    });
    for (let i = 0; i < 40 && (await twin.info()).lastSequence < 2; i++) await sleep(50);
    const letters = (await twin.read(1, 10)).map((rec) => decodeDeadLetter(rec.value)!.header.group);
    expect(letters.sort()).toEqual(["a", "b"]);
    const groups = (await stub.info()).groups.map((g) => [g.group, g.ackFloor, g.pendingDeadLetter, g.deadLettered]);
    expect(groups.sort()).toEqual([["a", 2, 0, 1], ["b", 2, 0, 1]]);
  });
});
