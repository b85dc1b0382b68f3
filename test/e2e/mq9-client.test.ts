/**
 * End-to-end: the typed mq9 client (client/mq9/) against the real local
 * broker, every method on all three transports — `http` (POST /mq9),
 * `nats-ws` (WebSocket /nats) and `nats` (TCP through the NATS bridge) —
 * with identical results; request/reply between two clients (also across
 * transports); consume() across a broker restart.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTunnel, toWebSocketUrl, type Tunnel } from "../../client/bridge/tunnel";
import { startLocalBroker, type LocalBroker } from "../../client/local/broker";
import { Mq9Client, Mq9ClientError, type Mq9Message, type Mq9TransportName } from "@mortarmq/mq9";

let broker: LocalBroker;
let bridge: Tunnel;
let stateDir: string;
/** The broker requires tokens: every client passes TOKEN (the refused-token test passes another). */
const TOKEN = "e2e-mq9-client-token";
const TRANSPORTS: readonly Mq9TransportName[] = ["http", "nats-ws", "nats"];

beforeAll(async () => {
  stateDir = mkdtempSync(join(tmpdir(), "mortarmq-e2e-mq9client-"));
  broker = await startLocalBroker({ stateDir, port: 0, vars: { AUTH_TOKENS: `${TOKEN}:acme` } });
  bridge = await startTunnel({ host: "127.0.0.1", port: 0, target: toWebSocketUrl(broker.url, "nats") });
});

afterAll(async () => {
  await bridge?.close();
  await broker?.stop();
  rmSync(stateDir, { recursive: true, force: true });
});

/** The URL a transport connects to. */
function urlOf(t: Mq9TransportName): string {
  return t === "nats" ? `nats://127.0.0.1:${bridge.port}` : broker.url;
}

function connect(t: Mq9TransportName, o: Parameters<typeof Mq9Client.connect>[1] = {}): Promise<Mq9Client> {
  return Mq9Client.connect(urlOf(t), { transport: t, token: TOKEN, ...o });
}

/** What a failed call gave: its kind, text and retryable (the same on every transport). */
async function failure(p: Promise<unknown>): Promise<{ kind: string; message: string; retryable: boolean }> {
  try {
    await p;
  } catch (e) {
    if (!(e instanceof Mq9ClientError)) throw e;
    return { kind: e.kind, message: e.message, retryable: e.retryable };
  }
  throw new Error("expected the call to fail");
}

const msg = (m: Mq9Message) => ({
  msgId: m.msgId, priority: m.priority, key: m.key, tags: m.tags, replyTo: m.replyTo, correlationId: m.correlationId, payload: Buffer.from(m.payload).toString("hex"),
});

/**
 * Every method once, against mailboxes and agents named with `p`; returns
 * the results with `p` replaced by `P` so that the runs of the transports
 * compare equal.
 */
async function everyMethod(mq: Mq9Client, p: string): Promise<unknown[]> {
  const out: unknown[] = [];
  const step = (label: string, value: unknown) => out.push([label, value]);
  const box = `${p}.inbox`;

  step("create", await mq.createMailbox({ name: box, ttl: 600 }));
  const generated = (await mq.createMailbox({ ttl: 60 })).mailAddress;
  step("generated address", /^mq9\.[0-9a-f]{40}$/.test(generated));
  step("create again", await failure(mq.createMailbox({ name: box })));
  step("create invalid", await failure(mq.createMailbox({ name: "Bad.Box" })));

  step("send text", await mq.send(box, "hello"));
  step("send bytes", await mq.send(box, Uint8Array.from({ length: 256 }, (_, i) => i)));
  step("send json + headers", await mq.send(box, { task: "translate" }, { key: "job", tags: ["billing", "vip"], priority: "urgent", ttl: 300 }));
  step("send conversation", await mq.send(box, "question", { replyTo: `${p}.replies`, correlationId: "req-1" }));
  step("send delayed", await mq.send(box, "later", { delay: 3600 }));
  step("send bad headers", await failure(mq.send(box, "x", { delay: 10, ttl: 5 })));
  step("send to missing", await failure(mq.send(`${p}.nobody`, "x")));
  step("send invalid address", await failure(mq.send("no_such..box", "x")));

  const all = await mq.fetch(box, { deliver: "earliest", maxWaitMs: 0 });
  step("fetch stateless", all.map(msg));
  step("text/json", [all[1]!.text(), all[0]!.json()]);
  step("create_time is unix seconds", all.every((m) => Math.abs(m.createTime - Date.now() / 1000) < 120));
  const first = await mq.fetch(box, { group: "g", deliver: "earliest", numMsgs: 2, maxWaitMs: 0 });
  step("fetch group, 2", first.map((m) => m.msgId));
  await first[1]!.ack();
  step("fetch after ack", (await mq.fetch(box, { group: "g", maxWaitMs: 0 })).map((m) => m.msgId));
  step("fetch from_id", (await mq.fetch(box, { fromId: 2, maxWaitMs: 0 })).map((m) => m.msgId));
  step("fetch from_time", (await mq.fetch(box, { fromTime: new Date(Date.now() - 60_000), numMsgs: 1, maxWaitMs: 0 })).map((m) => m.msgId));
  step("ack never fetched", await failure(mq.ack(box, "never", 0)));
  step("ack never assigned", await failure(mq.ack(box, "g", 99)));
  step("ack stateless message", await failure(all[0]!.ack()));
  step("fetch missing", await failure(mq.fetch(`${p}.nobody`, { maxWaitMs: 0 })));

  step("query all", (await mq.query(box)).map((m) => m.msgId));
  step("query key", (await mq.query(box, { key: "job" })).map((m) => m.msgId));
  step("query tags", (await mq.query(box, { tags: ["vip"] })).map((m) => m.msgId));
  step("query correlation", (await mq.query(box, { correlationId: "req-1" })).map(msg));
  step("query limit, since", (await mq.query(box, { limit: 2, since: 0 })).map((m) => m.msgId));
  step("query bad correlation", await failure(mq.query(box, { correlationId: "" })));

  step("delete", (await mq.delete(box, 0)) ?? "deleted");
  step("delete again", await failure(mq.delete(box, 0)));
  step("query after delete", (await mq.query(box)).map((m) => m.msgId));

  // long-poll: the FETCH is answered as soon as the SEND arrives
  const t0 = Date.now();
  const held = mq.fetch(box, { group: "late", maxWaitMs: 20_000 });
  await new Promise((r) => setTimeout(r, 300));
  await mq.send(box, "wake up");
  const woke = await held;
  step("long-poll", [woke.map((m) => m.text()), Date.now() - t0 < 10_000]);

  // consume: three messages in delivery order, each acknowledged, then close()
  const cbox = `${p}.consume`;
  await mq.createMailbox({ name: cbox, ttl: 600 });
  for (const [text, priority] of [["n1", "normal"], ["c1", "critical"], ["u1", "urgent"]] as const) await mq.send(cbox, text, { priority });
  const consumer = mq.consume(cbox, { group: "workers", deliver: "earliest", maxWaitMs: 1000 });
  const seen: string[] = [];
  for await (const m of consumer) {
    seen.push(m.text());
    await m.ack();
    if (seen.length === 3) consumer.close();
  }
  step("consume", [seen, consumer.closed]);
  step("consume acked all", (await mq.fetch(cbox, { group: "workers", maxWaitMs: 0 })).length);

  // agents
  const name = `${p}.translator`;
  step("register", (await mq.agents.register({ name, mailbox: `mq9://broker/${box}`, description: `translates documents zq${p}zq` })) ?? "registered");
  step("report", (await mq.agents.report({ name, status: "busy" })) ?? "reported");
  const found = await mq.agents.discover({ text: `zq${p}zq` });
  step("discover", found.map((a) => [a.name, a.mailbox, a._mq9?.report.status]));
  step("discover all includes it", (await mq.agents.discover({ limit: 100 })).some((a) => a.name === name));
  step("unregister", await mq.agents.unregister({ name }));
  step("unregister again", await mq.agents.unregister({ mailbox: `mq9://broker/${box}` }));
  step("report unknown", await failure(mq.agents.report({ name, status: "idle" })));

  // low level
  step("call", await mq.call(`$mq9.AI.MSG.QUERY.${cbox}`, { limit: 1 }).then((r) => [r.error, (r.messages as unknown[]).length]));
  step("call unknown subject", await failure(mq.call("$mq9.AI.MSG.PUSH.x", {})));

  return JSON.parse(JSON.stringify(out).replaceAll(p, "P"));
}

describe("every method on every transport", () => {
  it("gives the documented results, identical over http, nats-ws and nats", async () => {
    const runs: Record<string, unknown[]> = {};
    for (const t of TRANSPORTS) {
      const mq = await connect(t);
      expect(mq.transport).toBe(t);
      runs[t] = await everyMethod(mq, `e2e${t.replace("-", "")}${Date.now().toString(36)}`);
      await mq.close();
    }
    const r = new Map(runs.http as [string, unknown][]);
    expect(r.get("create")).toEqual({ mailAddress: "P.inbox" });
    expect(r.get("generated address")).toBe(true);
    expect(r.get("create again")).toEqual({ kind: "mailbox_exists", message: "mailbox P.inbox already exists", retryable: false });
    expect(r.get("create invalid")).toEqual({ kind: "invalid_request", message: 'invalid mail_address "Bad.Box": contains upper-case "B" (addresses are lower case)', retryable: false });
    expect([r.get("send text"), r.get("send bytes"), r.get("send json + headers"), r.get("send conversation"), r.get("send delayed")])
      .toEqual([{ msgId: 0 }, { msgId: 1 }, { msgId: 2 }, { msgId: 3 }, { msgId: -1 }]);
    expect(r.get("send bad headers")).toEqual({ kind: "invalid_request", message: "mq9-ttl (5s) must be greater than mq9-delay (10s): the message would expire before it becomes visible", retryable: false });
    expect(r.get("send to missing")).toEqual({ kind: "mailbox_not_found", message: "mailbox P.nobody does not exist", retryable: false });
    expect(r.get("send invalid address")).toMatchObject({ kind: "invalid_request", message: expect.stringMatching(/^invalid mail_address "no_such\.\.box": /) });
    const hex = (s: string) => Buffer.from(s).toString("hex");
    expect(r.get("fetch stateless")).toEqual([
      { msgId: 2, priority: "urgent", key: "job", tags: ["billing", "vip"], replyTo: null, correlationId: null, payload: hex('{"task":"translate"}') },
      { msgId: 0, priority: "normal", key: null, tags: [], replyTo: null, correlationId: null, payload: hex("hello") },
      { msgId: 1, priority: "normal", key: null, tags: [], replyTo: null, correlationId: null, payload: Buffer.from(Uint8Array.from({ length: 256 }, (_, i) => i)).toString("hex") },
      { msgId: 3, priority: "normal", key: null, tags: [], replyTo: "P.replies", correlationId: "req-1", payload: hex("question") },
    ]);
    expect(r.get("text/json")).toEqual(["hello", { task: "translate" }]);
    expect(r.get("create_time is unix seconds")).toBe(true);
    expect(r.get("fetch group, 2")).toEqual([2, 0]);
    expect(r.get("fetch after ack")).toEqual([1, 3]); // the ACK of 0 (last of the batch) acknowledged urgent 2 too
    expect(r.get("fetch from_id")).toEqual([2, 3]);
    expect(r.get("fetch from_time")).toEqual([2]);
    expect(r.get("ack never fetched")).toEqual({ kind: "invalid_request", message: "consumer group never has not fetched from mailbox P.inbox", retryable: false });
    expect(r.get("ack never assigned")).toEqual({ kind: "message_not_found", message: "message not found", retryable: false });
    expect(r.get("ack stateless message")).toMatchObject({ kind: "invalid_request", retryable: false });
    expect(r.get("fetch missing")).toEqual({ kind: "mailbox_not_found", message: "mailbox P.nobody does not exist", retryable: false });
    expect(r.get("query all")).toEqual([0, 1, 2, 3]);
    expect(r.get("query key")).toEqual([2]);
    expect(r.get("query tags")).toEqual([2]);
    expect(r.get("query correlation")).toEqual([{ msgId: 3, priority: "normal", key: null, tags: [], replyTo: "P.replies", correlationId: "req-1", payload: hex("question") }]);
    expect(r.get("query limit, since")).toEqual([2, 3]);
    expect(r.get("query bad correlation")).toEqual({ kind: "invalid_request", message: 'invalid request field correlation_id "": must not be empty', retryable: false });
    expect(r.get("delete")).toBe("deleted");
    expect(r.get("delete again")).toEqual({ kind: "message_not_found", message: "message not found", retryable: false });
    expect(r.get("query after delete")).toEqual([1, 2, 3]);
    expect(r.get("long-poll")).toEqual([["wake up"], true]);
    expect(r.get("consume")).toEqual([["c1", "u1", "n1"], true]);
    expect(r.get("consume acked all")).toBe(0);
    expect([r.get("register"), r.get("report")]).toEqual(["registered", "reported"]);
    expect(r.get("discover")).toEqual([["P.translator", "mq9://broker/P.inbox", "busy"]]);
    expect(r.get("discover all includes it")).toBe(true);
    expect([r.get("unregister"), r.get("unregister again")]).toEqual([{ removed: true }, { removed: false }]);
    expect(r.get("report unknown")).toEqual({ kind: "invalid_request", message: "agent P.translator is not registered", retryable: false });
    expect(r.get("call")).toEqual(["", 1]);
    expect(r.get("call unknown subject")).toEqual({ kind: "invalid_request", message: 'unknown mq9 subject "$mq9.AI.MSG.PUSH.x"', retryable: false });
    expect(runs["nats-ws"]).toEqual(runs.http);
    expect(runs.nats).toEqual(runs.http);
  });

  it("keys and tags that are not ASCII arrive as sent on every transport; a tag with a comma or a line break is refused before sending", async () => {
    const results: Record<string, unknown> = {};
    for (const t of TRANSPORTS) {
      const mq = await connect(t);
      const { mailAddress } = await mq.createMailbox({ ttl: 60 });
      await mq.send(mailAddress, "x", { key: "clé 🙂", tags: ["ü", "naïve", "日本"] });
      const refused = [
        await failure(mq.send(mailAddress, "x", { tags: ["a,b"] })),
        await failure(mq.send(mailAddress, "x", { key: "a\nb" })),
        await failure(mq.send(mailAddress, "x", { tags: ["ok", "c\rd"] })),
      ];
      results[t] = { stored: (await mq.query(mailAddress)).map((m) => [m.key, m.tags]), refused, left: (await mq.query(mailAddress)).length };
      await mq.close();
    }
    expect(results.http).toEqual({
      stored: [["clé 🙂", ["ü", "naïve", "日本"]]],
      refused: [
        { kind: "invalid_request", message: 'tag "a,b" contains a comma: mq9-tags is a comma list, so it would arrive as two tags', retryable: false },
        { kind: "invalid_request", message: "mq9-key must not contain a line break (CR or LF): header values are one line", retryable: false },
        { kind: "invalid_request", message: "mq9-tags must not contain a line break (CR or LF): header values are one line", retryable: false },
      ],
      left: 1,
    });
    expect(results["nats-ws"]).toEqual(results.http);
    expect(results.nats).toEqual(results.http);
  });

  it("a refused token is unauthorized on every transport", async () => {
    const results = [];
    for (const t of TRANSPORTS) {
      const attempt = (async () => {
        const mq = await connect(t, { token: "wrong-token", reconnect: false });
        try {
          await mq.query("a.b");
        } finally {
          await mq.close();
        }
      })();
      const f = await failure(attempt);
      results.push([t, f.kind, f.retryable]);
    }
    expect(results).toEqual([["http", "unauthorized", false], ["nats-ws", "unauthorized", false], ["nats", "unauthorized", false]]);
  });
});

describe("request / reply", () => {
  it("between two clients on each transport, and across transports: the answer carries the request's correlation id", async () => {
    const pairs: [Mq9TransportName, Mq9TransportName][] = [["http", "http"], ["nats-ws", "nats-ws"], ["nats", "nats"], ["http", "nats"], ["nats-ws", "http"]];
    for (const [ta, tb] of pairs) {
      const requester = await connect(ta);
      const responder = await connect(tb);
      const inbox = `rr.${ta.replace("-", "")}.${tb.replace("-", "")}.${Date.now().toString(36)}`;
      await responder.createMailbox({ name: inbox, ttl: 600 });
      const serving = (async () => {
        const consumer = responder.consume(inbox, { group: "service", deliver: "earliest", maxWaitMs: 2000 });
        let served = 0;
        for await (const m of consumer) {
          await m.reply(`echo: ${m.text()} (${m.correlationId?.length} hex digits)`);
          await m.ack();
          if (++served === 3) consumer.close();
        }
        return served;
      })();
      const answers = await Promise.all(["a", "b", "c"].map((q) => requester.request(inbox, q, { timeoutMs: 20_000 })));
      expect(answers.map((m) => m.text()), `${ta} → ${tb}`).toEqual(["echo: a (32 hex digits)", "echo: b (32 hex digits)", "echo: c (32 hex digits)"]);
      expect(new Set(answers.map((m) => m.correlationId)).size).toBe(3);
      expect(answers.every((m) => /^mq9\.[0-9a-f]{40}$/.test(m.mailAddress))).toBe(true); // the private reply mailbox
      expect(await serving).toBe(3);
      // the requests are stored in the service's mailbox with reply-to and correlation id. The three were
      // sent concurrently: a mailbox keeps arrival order (docs/mq9.md "Messages"), and neither the mq9
      // spec nor the client orders concurrent calls (over http they are separate requests), so the
      // stored order is not the call order — compared as sets, by correlation id
      const byCorrelation = (xs: (string | null)[][]) => [...xs].sort((x, y) => String(x[1]).localeCompare(String(y[1])));
      const stored = await responder.query(inbox);
      expect(byCorrelation(stored.map((m) => [m.replyTo, m.correlationId]))).toEqual(byCorrelation(answers.map((a) => [a.mailAddress, a.correlationId])));
      await requester.close();
      await responder.close();
    }
  });

  it("a request nobody answers times out; reply() of a message without reply_to is refused", async () => {
    const mq = await connect("http");
    const box = `rr.silent.${Date.now().toString(36)}`;
    await mq.createMailbox({ name: box, ttl: 60 });
    const t0 = Date.now();
    expect(await failure(mq.request(box, "anyone?", { timeoutMs: 1500 }))).toEqual({ kind: "unavailable", message: "no reply within 1500 ms", retryable: true });
    expect(Date.now() - t0).toBeGreaterThanOrEqual(1400);
    await mq.send(box, "no reply-to");
    const [m] = (await mq.query(box)).filter((x) => x.replyTo === null);
    expect(await failure(m!.reply("x"))).toMatchObject({ kind: "invalid_request", message: expect.stringContaining("has no reply_to") });
    await mq.close();
  });
});

describe("consume across a broker restart", () => {
  it("every transport's consumer backs off while the broker is down and receives every message once it is back", async () => {
    const producer = await connect("http");
    const boxes = Object.fromEntries(TRANSPORTS.map((t) => [t, `restart.${t.replace("-", "")}.${Date.now().toString(36)}`]));
    for (const t of TRANSPORTS) {
      await producer.createMailbox({ name: boxes[t]!, ttl: 3600 });
      await producer.send(boxes[t]!, "before 1");
      await producer.send(boxes[t]!, "before 2");
    }
    const errors: Record<string, string[]> = { http: [], "nats-ws": [], nats: [] };
    const received: Record<string, string[]> = { http: [], "nats-ws": [], nats: [] };
    const loops = await Promise.all(TRANSPORTS.map(async (t) => {
      const mq = await connect(t, { timeoutMs: 5000 });
      const consumer = mq.consume(boxes[t]!, { group: "g", deliver: "earliest", maxWaitMs: 1000, onError: (e) => errors[t]!.push(e.kind) });
      const done = (async () => {
        for await (const m of consumer) {
          received[t]!.push(m.text());
          await m.ack().catch(() => {}); // an ACK lost in the restart: the message comes again
          if (new Set(received[t]).size === 4) consumer.close();
        }
      })();
      return { mq, consumer, done };
    }));
    await until(() => TRANSPORTS.every((t) => received[t]!.length >= 2), 30_000);
    await broker.stop();
    await until(() => TRANSPORTS.every((t) => errors[t]!.length > 0), 30_000); // every consumer sees the broker gone
    broker = await startLocalBroker({ stateDir, port: broker.port, vars: { AUTH_TOKENS: `${TOKEN}:acme` } });
    for (const t of TRANSPORTS) {
      await producer.send(boxes[t]!, "after 1");
      await producer.send(boxes[t]!, "after 2");
    }
    await Promise.all(loops.map((l) => l.done));
    for (const t of TRANSPORTS) {
      expect([...new Set(received[t])], t).toEqual(["before 1", "before 2", "after 1", "after 2"]);
      expect(errors[t]!.length, t).toBeGreaterThan(0);
      expect(new Set(errors[t]), t).toEqual(new Set(["unavailable"]));
    }
    for (const l of loops) await l.mq.close();
    await producer.close();
  });
});

async function until(cond: () => boolean, timeoutMs: number): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > end) throw new Error("condition not reached in time");
    await new Promise((r) => setTimeout(r, 50));
  }
}
