/**
 * A topic's location hint (docs/deploy.md "Placement"; issue 27 item 6)
 * against the real Worker and objects on an open broker: `POST /v0/topics`
 * validates and stores it, every topic document shows it (source and
 * `.dlq` twin), it survives the registry's restart, a partition learns it
 * with its registration, and the stubs of the topic's objects are made with
 * it (objects/shared/location-hint.ts) — which the local runtime accepts
 * and ignores.
 */
import { SELF, env, runInDurableObject } from "cloudflare:test";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { TopicDetail, TopicPage } from "../../../wire/admin/console";
import { LOCATION_HINTS } from "../../../wire/admin/location-hint";
import { registryStub } from "../../../objects/registry/stub";
import { partitionStub } from "../../../objects/partition/stub";
import { groupStub } from "../../../objects/group/stub";
import { noteTopicHint, topicObjectOptions } from "../../../objects/shared/location-hint";
import type { TopicInfo } from "../../../objects/registry/rpc";

const base = "http://broker";
const unique = (b: string) => `${b}-${Math.random().toString(36).slice(2, 10)}`;

async function call<T = Record<string, unknown>>(method: string, path: string, body?: unknown): Promise<{ status: number; body: T }> {
  const res = await SELF.fetch(base + path, { method, body: body === undefined ? undefined : JSON.stringify(body) });
  return { status: res.status, body: (await res.json()) as T };
}

const find = async (name: string) => (await registryStub(env, "default").find(name)) as TopicInfo | null;

afterEach(() => vi.restoreAllMocks());

describe("topic location hint", () => {
  it("is validated, stored with the topic and shown by every topic document; another hint for an existing topic is refused", async () => {
    const name = unique("hinted");
    const created = await call("POST", "/v0/topics", { name, partitions: 2, location_hint: "weur" });
    expect(created).toMatchObject({ status: 201, body: { name, partition_count: 2, created: true, location_hint: "weur" } });

    const bad = await call<{ error: string }>("POST", "/v0/topics", { name: unique("bad"), partitions: 1, location_hint: "mars" });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toContain(`location_hint: location hint "mars" is not one of ${LOCATION_HINTS.join(", ")}`);
    expect((await call("POST", "/v0/topics", { name: unique("bad"), partitions: 1, location_hint: 7 })).status).toBe(400);

    expect(await call("POST", "/v0/topics", { name, partitions: 2, location_hint: "weur" })).toMatchObject({ status: 200, body: { created: false, location_hint: "weur" } });
    expect((await call("POST", "/v0/topics", { name, partitions: 2 })).status).toBe(200); // no hint given: nothing to compare
    const other = await call<{ error: string }>("POST", "/v0/topics", { name, partitions: 2, location_hint: "apac" });
    expect(other.status).toBe(409);
    expect(other.body.error).toMatch(/exists with location hint weur, not apac: a hint applies only when a topic is created/);

    const list = await call<TopicPage>("GET", `/v0/topics?prefix=${name}`);
    expect(list.body.topics.map((t) => [t.name, t.location_hint])).toEqual([[name, "weur"], [`${name}.dlq`, "weur"]]);
    expect((await call<TopicDetail>("GET", `/v0/topics/${name}`)).body.location_hint).toBe("weur");
    expect((await call<TopicDetail>("GET", `/v0/topics/${name}.dlq`)).body.location_hint).toBe("weur");
    const stats = await call<{ topics: { name: string; location_hint?: string }[] }>("GET", "/stats");
    expect(stats.body.topics.filter((t) => t.name.startsWith(name)).map((t) => t.location_hint)).toEqual(["weur", "weur"]);

    const plain = unique("plain");
    expect((await call("POST", "/v0/topics", { name: plain, partitions: 1 })).body).not.toHaveProperty("location_hint");
    expect((await call<TopicDetail>("GET", `/v0/topics/${plain}`)).body).not.toHaveProperty("location_hint");
    expect((await find(plain))!.locationHint).toBeUndefined();
  });

  it("survives the registry's restart; a partition's registration answer carries it (its .dlq twin starts with it)", async () => {
    const name = unique("kept");
    expect((await call("POST", "/v0/topics", { name, partitions: 1, location_hint: "apac" })).status).toBe(201);
    await runInDurableObject(registryStub(env, "default"), (_o, ctx) => ctx.abort("restart")).catch(() => {});
    const t = (await find(name))!;
    expect(t.locationHint).toBe("apac");
    const reg = await registryStub(env, "default").registerPartition(t.incarnation, t.topicId + 1, 0);
    expect(reg).toMatchObject({ live: true, locationHint: "apac" });
  });

  it("the topic's partition and group stubs are made with the hint, and the local runtime serves them", async () => {
    const name = unique("placed");
    expect((await call("POST", "/v0/topics", { name, partitions: 1, location_hint: "oc" })).status).toBe(201);
    // A test publish through the Worker starts the partition (with the hint, which workerd ignores).
    expect(await call("POST", `/v0/topics/${name}/partitions/0/records`, { value: "v" })).toMatchObject({ status: 201, body: { sequence: 1 } });
    const t = (await find(name))!;

    noteTopicHint("default", t); // as every path that holds the TopicInfo does (session stub-port, HTTP topic routes)
    expect(topicObjectOptions("default", t.incarnation)).toEqual({ locationHint: "oc" });
    const get = vi.spyOn(env.PARTITION, "get");
    const gget = vi.spyOn(env.GROUP, "get");
    const twin = partitionStub(env, "default", t.incarnation, t.topicId + 1, 0);
    const source = partitionStub(env, "default", t.incarnation, t.topicId, 0);
    groupStub(env, "default", t.incarnation, t.topicId, "g");
    expect(get.mock.calls.map((c) => c[1])).toEqual([{ locationHint: "oc" }, { locationHint: "oc" }]);
    expect(gget.mock.calls.map((c) => c[1])).toEqual([{ locationHint: "oc" }]);
    expect((await source.info()).lastSequence).toBe(1);
    expect((await twin.info()).lastSequence).toBe(0);

    const plain = unique("none");
    expect((await call("POST", "/v0/topics", { name: plain, partitions: 1 })).status).toBe(201);
    const p = (await find(plain))!;
    noteTopicHint("default", p);
    expect(topicObjectOptions("default", p.incarnation)).toBeUndefined(); // no hint: the runtime's default placement
  });
});
