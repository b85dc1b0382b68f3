/**
 * Consumer groups per topic are bounded (issue 28 item 3; docs/groups.md):
 * a topic with MORTAR_MAX_GROUPS_PER_TOPIC (1,000) recorded groups refuses
 * a SUB naming a new group with QUOTA_EXCEEDED 0x4002 — the group records
 * nothing in the registry — while its existing groups still join, and
 * another topic is not affected.
 */
import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { ErrorCode, Op, utf8Bytes, SUB_PARTITION_ANY } from "../../../wire/mortar";
import { registryStub } from "../../../objects/registry/stub";
import type { TopicRegistry } from "../../../objects/registry/TopicRegistry";
import type { TopicInfo } from "../../../objects/registry/rpc";
import { expectErr, expectOk } from "../helpers/mortar-ws";
import { Peer } from "../helpers/peer";

const declare = (p: Peer, name: string, n: number) => p.request({ op: Op.DECLARE, topic: utf8Bytes(name), partitionCount: n, flags: 0 });
const sub = (topicId: number, group: string) => ({
  op: Op.SUB, group: utf8Bytes(group), topicId, partition: SUB_PARTITION_ANY, startPolicy: 0, creditCount: 1, creditBytes: 0, flags: 0,
}) as const;

describe("consumer groups per topic", () => {
  it("a topic with 1,000 groups refuses a SUB with a new group name (QUOTA_EXCEEDED); its groups and other topics still work", async () => {
    const p = await Peer.open();
    const name = `glimit-${Date.now().toString(36)}`;
    expectOk(await declare(p, name, 1), Op.DECLARE);
    expectOk(await declare(p, `${name}-other`, 1), Op.DECLARE);
    const reg = registryStub(env, "default");
    const topic = (await reg.find(name)) as TopicInfo | null;
    const { topicId, incarnation } = topic!;
    // 999 groups recorded as their first joins record them, and one more by a real SUB
    await runInDurableObject(reg, async (r: TopicRegistry) => {
      for (let i = 0; i < 999; i++) expect(await r.registerGroup(incarnation, topicId, `g${i}`)).toBe(true);
    });
    expectOk(await p.request(sub(topicId, "g999")), Op.SUB);

    const refused = expectErr(await p.request(sub(topicId, "one-too-many")), ErrorCode.QUOTA_EXCEEDED, Op.SUB);
    expect(new TextDecoder().decode(refused.message))
      .toBe(`topic "${name}" already has 1000 consumer groups, the limit (MORTAR_MAX_GROUPS_PER_TOPIC 1000): use an existing group or delete one`);
    expect(await reg.groupNames(incarnation, topicId)).not.toContain("one-too-many");
    expect((await reg.groupNames(incarnation, topicId)).length).toBe(1000);

    expectOk(await p.request(sub(topicId, "g5")), Op.SUB); // an existing group joins
    const other = (await reg.find(`${name}-other`)) as TopicInfo | null;
    expectOk(await p.request(sub(other!.topicId, "one-too-many")), Op.SUB); // another topic has its own count
    p.close();
  });
});
