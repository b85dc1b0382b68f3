/**
 * The console's tenant-scoped APIs (docs/console.md "APIs") against the real
 * Worker and objects on an open broker: topics (create, list with pages and
 * prefix, detail, test publish, peek, delete), mailboxes (listing from the
 * mailbox index with prefix and pages, detail with lanes and group floors),
 * and mq9 through `POST /v0/mq9/*`.
 */
import { SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { MailboxDetail, MailboxPage, PeekAnswer, TopicDetail, TopicPage, WhoamiAnswer } from "../../../wire/admin/console";

const base = "http://broker";
let n = 0;
const unique = (b: string) => `${b}${++n}x${Math.random().toString(36).slice(2, 8)}`;

async function call<T = Record<string, unknown>>(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<{ status: number; body: T }> {
  const res = await SELF.fetch(base + path, { method, headers, body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body) });
  return { status: res.status, body: (await res.json()) as T };
}

describe("console APIs on an open broker", () => {
  it("whoami: the open broker makes everyone the operator of tenant default", async () => {
    const r = await call<WhoamiAnswer>("GET", "/v0/whoami");
    expect(r).toEqual({ status: 200, body: { auth: "open", role: "operator", tenant: "default", allow: [], deny: [] } });
  });

  it("creates, lists, describes, publishes to, peeks and deletes a topic", async () => {
    const prefix = unique("ct");
    const name = `${prefix}.orders`;
    const created = await call("POST", "/v0/topics", { name, partitions: 2 });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ name, partition_count: 2, created: true });
    expect((await call("POST", "/v0/topics", { name, partitions: 2 })).status).toBe(200);
    const mismatch = await call("POST", "/v0/topics", { name, partitions: 3 });
    expect(mismatch.status).toBe(409);
    expect(mismatch.body.error).toMatch(/exists with 2 partitions/);
    expect((await call("POST", "/v0/topics", { name: "", partitions: 1 })).status).toBe(400);
    expect((await call("POST", "/v0/topics", { name: "x", partitions: 0 })).body.error).toMatch(/^partitions: /);
    expect((await call("POST", "/v0/topics", `${name}`)).status).toBe(400);

    for (let i = 0; i < 3; i++) {
      const p = await call("POST", `/v0/topics/${encodeURIComponent(name)}/partitions/1/records`, { key: `k${i}`, value: `hello ${i}` });
      expect(p).toEqual({ status: 201, body: { topic: name, partition: 1, sequence: i + 1 } });
    }
    expect((await call("POST", `/v0/topics/${encodeURIComponent(name)}/partitions/2/records`, { value: "x" })).status).toBe(400);

    const peek = await call<PeekAnswer>("GET", `/v0/topics/${encodeURIComponent(name)}/partitions/1/records?last=2`);
    expect(peek.status).toBe(200);
    expect(peek.body.records.map((r) => [r.sequence, atob(r.key), atob(r.value), r.producer_id])).toEqual([[2, "k1", "hello 1", "0"], [3, "k2", "hello 2", "0"]]);
    expect((await call<PeekAnswer>("GET", `/v0/topics/${encodeURIComponent(name)}/partitions/0/records`)).body.records).toEqual([]);

    const list = await call<TopicPage>("GET", `/v0/topics?prefix=${prefix}`);
    expect(list.status).toBe(200);
    expect(list.body.topics.map((t) => [t.name, t.dlq, t.partition_count, t.records, t.groups, t.lag])).toEqual([
      [name, false, 2, 3, 0, 0], [`${name}.dlq`, true, 2, 0, 0, 0],
    ]);
    expect(list.body.topics[0]!.size_bytes).toBe(3 * ("k0".length + "hello 0".length));
    expect(list.body.next).toBeNull();

    const detail = await call<TopicDetail>("GET", `/v0/topics/${encodeURIComponent(name)}`);
    expect(detail.body.partitions.map((p) => [p.partition, p.first_sequence, p.high_watermark, p.records])).toEqual([[0, 1, 0, 0], [1, 1, 3, 3]]); // an empty partition's log starts at 1
    expect(detail.body.groups).toEqual([]);

    expect((await call("DELETE", `/v0/topics/${encodeURIComponent(name)}.dlq`)).status).toBe(400);
    expect(await call("DELETE", `/v0/topics/${encodeURIComponent(name)}`)).toEqual({ status: 200, body: { tenant: "default", topic: name, deleted: true } });
    expect((await call("GET", `/v0/topics/${encodeURIComponent(name)}`)).status).toBe(404);
    expect((await call<TopicPage>("GET", `/v0/topics?prefix=${prefix}`)).body.topics).toEqual([]);
  });

  it("refuses a body that is not UTF-8, a name with a lone surrogate and a body over 1 MiB with 4xx; nothing is created", async () => {
    const name = unique("utf");
    const send = async (body: BodyInit, headers: Record<string, string> = {}) => {
      const res = await SELF.fetch(`${base}/v0/topics`, { method: "POST", body, headers });
      return { status: res.status, body: (await res.json()) as { error: string } };
    };
    // the bytes ff fe inside the JSON string: not UTF-8 (they must not become U+FFFD U+FFFD)
    const bad = new Uint8Array([...new TextEncoder().encode(`{"name":"${name}`), 0xff, 0xfe, ...new TextEncoder().encode('","partitions":1}')]);
    expect(await send(bad)).toEqual({ status: 400, body: { error: "body is not valid UTF-8" } });
    // a JSON escape of a lone surrogate: no UTF-8 spelling
    expect(await send(`{"name":"${name}\\ud800","partitions":1}`)).toEqual({ status: 400, body: { error: "name: must be valid Unicode (a lone surrogate has no UTF-8 form)" } });
    // a 3 MiB body: refused by its size, unread (a 60 MiB name was a 503 naming the runtime's RPC limit)
    const huge = await send(JSON.stringify({ name: "a".repeat(3 * 1024 * 1024), partitions: 1 }));
    expect(huge).toEqual({ status: 413, body: { error: "body is over 1048576 bytes" } });
    // nested 100,000 deep (200 KB): 400, not a stack overflow's 503; 32 levels are still read (and refused by the schema)
    const deep = await send(`{"name":"${name}","partitions":1,"x":${"[".repeat(100_000)}${"]".repeat(100_000)}}`);
    expect(deep).toEqual({ status: 400, body: { error: "body is nested deeper than 32 levels" } });
    expect((await send(`{"name":"${name}","partitions":1,"x":${"[".repeat(31)}${"]".repeat(31)}}`)).body.error).toMatch(/^x: /);
    const long = await send(JSON.stringify({ name: "a".repeat(256), partitions: 1 }));
    expect(long.status).toBe(400);
    const topics = (await call<TopicPage>("GET", `/v0/topics?prefix=${name}`)).body.topics;
    expect(topics).toEqual([]);
    // the same bounds on the test publish
    expect((await call("POST", "/v0/topics", { name, partitions: 1 })).status).toBe(201);
    const pub = await SELF.fetch(`${base}/v0/topics/${name}/partitions/0/records`, { method: "POST", body: new Uint8Array([...new TextEncoder().encode('{"value":"'), 0xc3, ...new TextEncoder().encode('"}')]) });
    expect([pub.status, await pub.json()]).toEqual([400, { error: "body is not valid UTF-8" }]);
  });

  it("pages topics by name with a cursor, and a prefix range", async () => {
    const prefix = unique("pg");
    const names = ["c", "a", "e", "b", "d"].map((x) => `${prefix}.${x}`);
    for (const nm of names) expect((await call("POST", "/v0/topics", { name: nm, partitions: 1 })).status).toBe(201);
    await call("POST", "/v0/topics", { name: `${prefix}x.other`, partitions: 1 }); // shares the prefix's first characters, not its "."
    const seen: string[] = [];
    let after: string | null = null;
    let pages = 0;
    do {
      const r: { body: TopicPage } = await call<TopicPage>("GET", `/v0/topics?prefix=${prefix}.&limit=2${after ? `&after=${encodeURIComponent(after)}` : ""}`);
      seen.push(...r.body.topics.filter((t) => !t.dlq).map((t) => t.name));
      after = r.body.next;
      pages++;
    } while (after !== null && pages < 10);
    expect(seen).toEqual([...names].sort());
    expect(pages).toBe(3);
    expect((await call("GET", "/v0/topics?limit=0")).status).toBe(400);
  });

  it("every whole-number query parameter out of its range is a 400 naming the range, above as below (never clamped)", async () => {
    const name = unique("range");
    expect((await call("POST", "/v0/topics", { name, partitions: 1 })).status).toBeLessThan(300);
    for (const [path, error] of [
      ["/v0/topics?limit=201", "limit must be a whole number from 1 to 200"],
      ["/v0/topics?limit=0", "limit must be a whole number from 1 to 200"],
      ["/v0/mailboxes?limit=1001", "limit must be a whole number from 1 to 1000"],
      [`/v0/topics/${name}/partitions/0/records?last=101`, "last must be a whole number from 1 to 100"],
      ["/v0/overview?minutes=61", "minutes must be a whole number from 1 to 60"],
      ["/v0/overview?minutes=1.5", "minutes must be a whole number from 1 to 60"],
    ] as const) {
      expect([path, await call("GET", path)]).toEqual([path, { status: 400, body: { error } }]);
    }
    expect((await call("GET", "/v0/topics?limit=200")).status).toBe(200);
    expect((await call("GET", "/v0/mailboxes?limit=1000")).status).toBe(200);
  });

  it("lists mailboxes by prefix in pages and describes one with its lanes and group floors", async () => {
    const prefix = unique("mb");
    const addrs = ["b", "a", "c"].map((x) => `${prefix}.${x}`);
    for (const a of addrs) expect((await call("POST", "/v0/mq9/$mq9.AI.MAILBOX.CREATE", { name: a, ttl: 0 })).body.error).toBe("");
    await call("POST", "/mq9/$mq9.AI.MAILBOX.CREATE", { name: `${prefix}z`, ttl: 0 });
    const first = await call<MailboxPage>("GET", `/v0/mailboxes?prefix=${prefix}.&limit=2`);
    expect(first.status).toBe(200);
    expect(first.body.mailboxes.map((m) => m.mail_address)).toEqual([`${prefix}.a`, `${prefix}.b`]);
    expect(first.body.mailboxes[0]!.expires_at).toBeNull();
    const second = await call<MailboxPage>("GET", `/v0/mailboxes?prefix=${prefix}.&limit=2&after=${first.body.next}`);
    expect(second.body.mailboxes.map((m) => m.mail_address)).toEqual([`${prefix}.c`]);
    expect(second.body.next).toBeNull();
    expect((await call("GET", "/v0/mailboxes?prefix=Upper")).status).toBe(400);

    const a = `${prefix}.a`;
    const send = (body: string, priority: string) => SELF.fetch(`${base}/v0/mq9/$mq9.AI.MSG.SEND.${a}`, { method: "POST", headers: { "mq9-priority": priority }, body });
    for (const [b, p] of [["n1", "normal"], ["c1", "critical"], ["n2", "normal"], ["u1", "urgent"]] as const) expect((await send(b, p)).status).toBe(200);
    const fetched = await call<{ messages: { msg_id: number }[] }>("POST", `/v0/mq9/$mq9.AI.MSG.FETCH.${a}`, { group_name: "workers", deliver: "earliest", config: { num_msgs: 2 } });
    expect(fetched.body.messages.map((m) => m.msg_id)).toEqual([1, 3]); // critical, then urgent
    expect((await call("POST", `/v0/mq9/$mq9.AI.MSG.ACK.${a}`, { group_name: "workers", mail_address: a, msg_id: 3 })).body.error).toBe("");
    const d = await call<MailboxDetail>("GET", `/v0/mailboxes/${a}`);
    expect(d.status).toBe(200);
    expect(d.body).toMatchObject({
      mail_address: a, ttl: 0, expires_at: null, next_msg_id: 4, delayed: 0, groups_total: 1,
      lanes: { critical: { messages: 1, bytes: 2 }, urgent: { messages: 1, bytes: 2 }, normal: { messages: 2, bytes: 4 } },
      groups: [{ group_name: "workers", floors: { critical: 2, urgent: 4, normal: 0 }, delivered: { critical: 1, urgent: 3, normal: null } }],
    });
    expect((await call("GET", `/v0/mailboxes/${prefix}.nobody`)).status).toBe(404);
    expect((await call("GET", "/v0/mailboxes/Bad")).status).toBe(400);
  });
});
