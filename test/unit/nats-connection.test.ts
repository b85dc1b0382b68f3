import { describe, expect, it } from "vitest";
import {
  NatsConnection,
  initialState,
  newOutbox,
  type ConnectionConfig,
  type Outbox,
} from "../../wire/nats/connection";
import { NatsParser } from "../../wire/nats/parser";
import { encodeOut, utf8Length } from "../../wire/nats/encoder";
import fc from "fast-check";

const te = new TextEncoder();
const td = new TextDecoder();

/** A connection plus a helper that feeds wire text and returns what the server wrote. */
function harness(tenant: string | null = "default", cfg: Partial<ConnectionConfig> = {}) {
  const conn = new NatsConnection({ maxPayload: 1024 * 1024, ...cfg }, initialState(tenant ?? undefined));
  const parser = new NatsParser();
  const send = (text: string, auth: (token?: string) => string | null = () => "default"): Outbox & { text: string } => {
    const box = newOutbox();
    const r = parser.push(te.encode(text));
    for (const op of r.ops) {
      const p = conn.handle(op, box);
      if (p) {
        const tenant = auth(p.token);
        conn.completeConnect(p, tenant ? { ok: true, tenant } : { ok: false }, box);
      }
      if (box.close) break;
    }
    if (r.error) conn.fail(r.error, box);
    return { ...box, text: encodeOut(box.out).map((b) => td.decode(b)).join("") };
  };
  return { conn, send };
}

const quiet = 'CONNECT {"verbose":false,"pedantic":false,"headers":true,"no_responders":true}\r\n';

describe("NatsConnection", () => {
  it("before CONNECT uses nats-server defaults: verbose +OK, PING → PONG", () => {
    const { send } = harness();
    expect(send("PING\r\nSUB foo 1\r\nUNSUB 1\r\n").text).toBe("PONG\r\n+OK\r\n+OK\r\n");
  });

  it("CONNECT verbose answers +OK; verbose false is silent", () => {
    expect(harness().send('CONNECT {"verbose":true}\r\n').text).toBe("+OK\r\n");
    const { send, conn } = harness();
    expect(send(quiet).text).toBe("");
    expect(conn.state).toMatchObject({ connected: true, verbose: false, headers: true, noResponders: true, echo: true });
  });

  it("auth required: an operation before CONNECT is an Authorization Violation (fatal)", () => {
    const { send, conn } = harness(null);
    const r = send("PING\r\n");
    expect(r.text).toBe("-ERR 'Authorization Violation'\r\n");
    expect(r.close).toBe(true);
    expect(conn.state.closed).toBe(true);
    expect(send("PING\r\n").text).toBe(""); // closed: ignored
  });

  it("auth: a rejected token is an Authorization Violation; an accepted one sets the tenant", () => {
    const bad = harness(null).send('CONNECT {"auth_token":"nope"}\r\n', () => null);
    expect(bad.text).toBe("-ERR 'Authorization Violation'\r\n");
    expect(bad.close).toBe(true);
    const { send, conn } = harness(null);
    let seen: string | undefined;
    send('CONNECT {"verbose":false,"user":"x","pass":"tok"}\r\nPING\r\n', (t) => ((seen = t), "acme"));
    expect(seen).toBe("tok");
    expect(conn.state.tenant).toBe("acme");
  });

  it("CONNECT errors: bad JSON, wrong field type, protocol > 1, no_responders without headers", () => {
    expect(harness().send("CONNECT nope\r\n").text).toBe("-ERR 'processConnect Parse Error: CONNECT argument is not JSON'\r\n");
    expect(harness().send('CONNECT {"verbose":"yes"}\r\n').text).toMatch(/^-ERR 'processConnect Parse Error: field "verbose": /);
    expect(harness().send('CONNECT {"protocol":2}\r\n').text).toBe("-ERR 'invalid client protocol'\r\n");
    const r = harness().send('CONNECT {"no_responders":true}\r\n');
    expect(r.text).toBe("-ERR 'no responders requires headers support'\r\n");
    expect(r.close).toBe(true);
  });

  it("PUB to an mq9 subject becomes a request; the reply reaches the wildcard inbox subscription", () => {
    const { send, conn } = harness();
    const hdr = "NATS/1.0\r\nMQ9-Priority: urgent\r\n\r\n";
    const r = send(quiet + `SUB _INBOX.abc.* 1\r\nHPUB $mq9.AI.MSG.SEND.task.001 _INBOX.abc.7 ${hdr.length} ${hdr.length + 2}\r\n${hdr}hi\r\n`);
    expect(r.text).toBe("");
    expect(r.requests).toHaveLength(1);
    const req = r.requests[0];
    expect(req).toMatchObject({ tenant: "default", subject: "$mq9.AI.MSG.SEND.task.001", reply: "_INBOX.abc.7", size: hdr.length + 2 });
    expect([...req.headers]).toEqual([["mq9-priority", "urgent"]]);
    expect(td.decode(req.payload)).toBe("hi");
    expect(req.payload.buffer.byteLength).toBe(2); // a copy, not a view pinning the received message
    expect(conn.pending).toEqual({ count: 1, bytes: hdr.length + 2 });
    const box = newOutbox();
    expect(conn.deliver(req.reply!, undefined, undefined, te.encode('{"error":""}'), box)).toBe(1);
    expect(td.decode(box.out[0] as Uint8Array)).toBe('MSG _INBOX.abc.7 1 12\r\n{"error":""}\r\n');
    conn.requestDone(req);
    expect(conn.pending).toEqual({ count: 0, bytes: 0 });
  });

  it("a text reply (an mq9 JSON string) is a MSG with its UTF-8 byte count, encoded once with its neighbours", () => {
    const conn = new NatsConnection({ maxPayload: 1024 }, { ...initialState("default"), connected: true, verbose: false });
    conn.handle({ op: "SUB", subject: "_INBOX.abc.*", sid: "1" }, newOutbox());
    const box = newOutbox();
    expect(conn.deliver("_INBOX.abc.1", undefined, undefined, '{"error":""}', box)).toBe(1);
    expect(conn.deliver("_INBOX.abc.2", undefined, undefined, '{"error":"caf\u00e9 \u{1F600}"}', box)).toBe(1);
    expect(conn.deliver("nobody.listens", undefined, undefined, "{}", box)).toBe(0);
    const bytes = encodeOut(box.out);
    expect(bytes).toHaveLength(1); // both MSGs in one buffer
    const reply2 = '{"error":"caf\u00e9 \u{1F600}"}';
    expect(td.decode(bytes[0])).toBe(`MSG _INBOX.abc.1 1 12\r\n{"error":""}\r\nMSG _INBOX.abc.2 1 ${te.encode(reply2).length}\r\n${reply2}\r\n`);
    expect(box.msgBytes).toBe(12 + te.encode(reply2).length);
  });

  it("a text payload to a header-capable subscriber with a header block goes as HMSG bytes", () => {
    const conn = new NatsConnection({ maxPayload: 1024 }, { ...initialState("default"), connected: true, verbose: false, headers: true });
    conn.handle({ op: "SUB", subject: "r", sid: "4" }, newOutbox());
    const box = newOutbox();
    const hdr = te.encode("NATS/1.0\r\nA: b\r\n\r\n");
    conn.deliver("r", undefined, hdr, "\u00e9", box);
    expect(encodeOut(box.out).map((b) => td.decode(b)).join("")).toBe(`HMSG r 4 ${hdr.length} ${hdr.length + 2}\r\nNATS/1.0\r\nA: b\r\n\r\n\u00e9\r\n`);
  });

  it("encodeOut keeps byte parts and text runs in order", () => {
    const parts = [te.encode("+OK\r\n"), "MSG a 1 1\r\nx\r\n", "MSG a 1 1\r\ny\r\n", te.encode("PONG\r\n"), "MSG b 2 0\r\n\r\n"];
    const out = encodeOut(parts);
    expect(out).toHaveLength(4);
    expect(out.map((b) => td.decode(b))).toEqual(["+OK\r\n", "MSG a 1 1\r\nx\r\nMSG a 1 1\r\ny\r\n", "PONG\r\n", "MSG b 2 0\r\n\r\n"]);
  });

  it("utf8Length is TextEncoder's length, lone surrogates included", () => {
    fc.assert(fc.property(fc.string({ unit: fc.oneof(fc.constantFrom("a", "\u00e9", "\u20ac", "\ud83d", "\ude00"), fc.string({ unit: "binary", maxLength: 1 })), maxLength: 20 }), (s) => {
      expect(utf8Length(s)).toBe(te.encode(s).length);
    }), { numRuns: 3000 });
  });

  it("no_responders: a request to an unserved subject gets the 503 HMSG nats-server sends", () => {
    const { send } = harness();
    const r = send(quiet + "SUB _INBOX.x.* 9\r\nPUB nobody.home _INBOX.x.1 2\r\nhi\r\n");
    expect(r.requests).toHaveLength(0);
    expect(r.text).toBe("HMSG _INBOX.x.1 9 43 43\r\nNATS/1.0 503\r\nNats-Subject: nobody.home\r\n\r\n\r\n");
  });

  it("no 503 without no_responders, or without a reply subject, or when nobody listens on the reply", () => {
    expect(harness().send('CONNECT {"verbose":false,"headers":true}\r\nSUB _INBOX.x.* 9\r\nPUB a _INBOX.x.1 0\r\n\r\n').text).toBe("");
    expect(harness().send(quiet + "SUB _INBOX.x.* 9\r\nPUB a 0\r\n\r\n").text).toBe("");
    expect(harness().send(quiet + "PUB a _INBOX.x.1 0\r\n\r\n").text).toBe("");
  });

  it("echo: a PUB reaches the connection's own subscriptions (with reply), unless echo is false", () => {
    const { send } = harness();
    expect(send(quiet + "SUB svc.> 1\r\nPUB svc.echo _INBOX.y.1 3\r\nabc\r\n").text).toBe("MSG svc.echo 1 _INBOX.y.1 3\r\nabc\r\n");
    const noEcho = harness().send('CONNECT {"verbose":false,"echo":false,"headers":true,"no_responders":true}\r\nSUB svc.> 1\r\nSUB _INBOX.y.* 2\r\nPUB svc.echo _INBOX.y.1 3\r\nabc\r\n');
    expect(noEcho.text).toMatch(/^HMSG _INBOX.y.1 2 .*NATS\/1.0 503/s);
  });

  it("HPUB is delivered as HMSG to header-capable clients and as MSG (headers dropped) otherwise", () => {
    const hdr = "NATS/1.0\r\nA: b\r\n\r\n";
    const pub = `HPUB t ${hdr.length} ${hdr.length + 1}\r\n${hdr}x\r\n`;
    expect(harness().send(quiet + "SUB t 1\r\n" + pub).text).toBe(`HMSG t 1 ${hdr.length} ${hdr.length + 1}\r\n${hdr}x\r\n`);
    const r = harness().send('CONNECT {"verbose":false}\r\nSUB t 1\r\n' + pub);
    expect(r.text).toBe("-ERR 'message headers not supported'\r\n");
    expect(r.close).toBe(true);
  });

  it("HPUB with an empty header block (#hdr 0) is delivered as a plain MSG, as nats-server does (an HMSG needs a NATS/1.0 block)", () => {
    expect(harness().send(quiet + "SUB t 1\r\nHPUB t 0 3\r\nabc\r\n").text).toBe("MSG t 1 3\r\nabc\r\n");
    expect(harness().send(quiet + "SUB t 1\r\nSUB _INBOX.r 2\r\nHPUB t _INBOX.r 0 0\r\n\r\n").text).toBe("MSG t 1 _INBOX.r 0\r\n\r\n");
  });

  it("a queue group gets one copy; plain subscriptions each get one", () => {
    const { send } = harness();
    const r = send(quiet + "SUB w q 1\r\nSUB w q 2\r\nSUB w 3\r\nSUB * other 4\r\nPUB w 1\r\nx\r\n");
    const sids = [...r.text.matchAll(/^MSG w (\d+) 1\r\n/gm)].map((m) => m[1]).sort();
    expect(sids).toHaveLength(3);
    expect(sids).toContain("3");
    expect(sids).toContain("4");
    expect(sids.filter((s) => s === "1" || s === "2")).toHaveLength(1);
  });

  it("UNSUB max removes the subscription after max messages and records the changes", () => {
    const { send, conn } = harness();
    send(quiet + "SUB a 1\r\nUNSUB 1 2\r\n");
    expect([...conn.subs.takeChanges().values()]).toEqual([{ sid: "1", subject: "a", delivered: 0, max: 2 }]);
    expect(send("PUB a 1\r\nx\r\nPUB a 1\r\ny\r\nPUB a 1\r\nz\r\n").text).toBe("MSG a 1 1\r\nx\r\nMSG a 1 1\r\ny\r\n");
    expect(conn.subs.size).toBe(0);
    expect(conn.subs.takeChanges().get("1")).toBeNull();
  });

  it("invalid subjects: non-fatal -ERR, nothing published or subscribed", () => {
    const { send, conn } = harness();
    const r = send(quiet + "SUB foo..bar 1\r\nPUB $mq9.AI.* _INBOX.a 0\r\n\r\nPUB a..b 0\r\n\r\nPING\r\n");
    expect(r.text).toBe("-ERR 'Invalid Subject'\r\n-ERR 'Invalid Publish Subject'\r\n-ERR 'Invalid Publish Subject'\r\nPONG\r\n");
    expect(r.close).toBe(false);
    expect(r.requests).toHaveLength(0);
    expect(conn.subs.size).toBe(0);
  });

  it("a bad header block on an mq9 request: non-fatal -ERR, no request", () => {
    const r = harness().send(quiet + "HPUB $mq9.AI.MSG.SEND.a r 5 5\r\nHTTP/\r\nPING\r\n");
    expect(r.text).toBe("-ERR 'bad message header detected'\r\nPONG\r\n");
    expect(r.requests).toHaveLength(0);
  });

  it("a malformed header block is not echoed to the connection's own subscriptions either", () => {
    const hdr = "NATS/1.0\r\nA b\r\n\r\n";
    const r = harness().send(quiet + `SUB foo 1\r\nHPUB foo ${hdr.length} ${hdr.length + 1}\r\n${hdr}x\r\nPING\r\n`);
    expect(r.text).toBe("-ERR 'bad message header detected'\r\nPONG\r\n");
  });

  it("bounds outstanding mq9 work: beyond the limit the connection is closed with Slow Consumer", () => {
    const { send, conn } = harness("default", { maxPendingRequests: 2, maxPendingBytes: 10 });
    const r1 = send(quiet + "PUB $mq9.AI.a r 1\r\nx\r\nPUB $mq9.AI.b r 1\r\nx\r\n");
    expect(r1.requests).toHaveLength(2);
    conn.requestDone(r1.requests[0]);
    expect(send("PUB $mq9.AI.c r 1\r\nx\r\n").requests).toHaveLength(1);
    const r3 = send("PUB $mq9.AI.d r 1\r\nx\r\n");
    expect(r3.text).toBe("-ERR 'Slow Consumer'\r\n");
    expect(r3.close).toBe(true);
    const bytes = harness("default", { maxPendingBytes: 10 }).send(quiet + "PUB $mq9.AI.a r 11\r\n01234567890\r\n");
    expect(bytes.text).toBe("-ERR 'Slow Consumer'\r\n");
  });

  it("bounds fan-out to the connection's own subscriptions: beyond it, Slow Consumer", () => {
    const { send } = harness("default", { maxOutboxBytes: 250 });
    const payload = "x".repeat(100);
    const r = send(quiet + `SUB f.> 1\r\nSUB f.* 2\r\nSUB > 3\r\nPUB f.g ${payload.length}\r\n${payload}\r\n`);
    expect(r.text.match(/^MSG f\.g/gm)).toHaveLength(2);
    expect(r.text.endsWith("-ERR 'Slow Consumer'\r\n")).toBe(true);
    expect(r.close).toBe(true);
  });

  it("caps subscriptions per connection (non-fatal)", () => {
    const { send } = harness("default", { maxSubscriptions: 2 });
    expect(send(quiet + "SUB a 1\r\nSUB b 2\r\nSUB c 3\r\nPING\r\n").text).toBe("-ERR 'maximum subscriptions exceeded'\r\nPONG\r\n");
  });

  it("a parser error is sent as a fatal -ERR after the operations before it", () => {
    const r = harness().send("PING\r\nPUB a 2000000\r\n");
    expect(r.text).toBe("PONG\r\n-ERR 'Maximum Payload Violation'\r\n");
    expect(r.close).toBe(true);
  });

  it("restores from persisted state and subscriptions", () => {
    const { send, conn } = harness();
    send(quiet + "SUB _INBOX.z.* 5\r\n");
    const again = new NatsConnection({ maxPayload: 1024 }, conn.state, conn.subs.list());
    const box = newOutbox();
    expect(again.deliver("_INBOX.z.1", undefined, undefined, te.encode("{}"), box)).toBe(1);
    expect(again.state.verbose).toBe(false);
  });
});
