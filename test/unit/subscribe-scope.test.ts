/** NATS SUB under token scopes (wire/admin/subscribe-scope.ts) and the connection's maySubscribe hook (wire/nats/connection.ts), over tables. */
import { describe, expect, it } from "vitest";
import { parseScopes } from "../../wire/admin/scopes";
import { decideSubscribe, patternCovers, patternsIntersect, subscribedMailboxes } from "../../wire/admin/subscribe-scope";
import { NatsConnection, initialState, newOutbox } from "../../wire/nats/connection";
import { NatsParser } from "../../wire/nats/parser";
import { encodeOut } from "../../wire/nats/encoder";

const tok = (s: string) => s.split(".");

describe("pattern algebra", () => {
  it.each([
    ["a.b", "a.b", true], ["a.*", "a.b", true], ["a.*", "b.*", false], [">", "a.b", true], ["a.>", "a", false],
    ["a.>", "*.b.c", true], ["*", "a.b", false], ["$mq9.AI.>", "_INBOX.>", false], ["$mq9.AI.>", "*.*.MSG", true],
  ])("%s ∩ %s → %s", (a, b, r) => {
    expect(patternsIntersect(tok(a), tok(b))).toBe(r);
    expect(patternsIntersect(tok(b), tok(a))).toBe(r);
  });
  it.each([
    ["a.>", "a.b.c", true], ["a.>", "a.*", true], ["a.>", "a.>", true], ["a.*", "a.>", false], ["a.*", "a.*", true],
    ["a.b", "a.*", false], ["*.inbox", "x.inbox", true], [">", "a", true], ["a", "a.b", false], ["a.b", "a", false],
  ])("%s ⊇ %s → %s", (o, i, r) => expect(patternCovers(tok(o), tok(i))).toBe(r));
});

describe("subscribedMailboxes", () => {
  it.each([
    ["_INBOX.abc.*", null], ["orders.created", null], ["$mq9.AI.MSG.SEND.orders.inbox", "orders.inbox"],
    ["$mq9.AI.MSG.FETCH.orders.*", "orders.*"], ["$mq9.AI.MSG.DELETE.orders.inbox.7", "orders.inbox"],
    ["$mq9.AI.MSG.DELETE.orders.>", "orders.>"], ["$mq9.AI.PUSH.CREATE.a", "a"], ["$mq9.AI.A2A.RECEIVER.CREATE.a.b", "a.b"],
    ["$mq9.AI.MSG.*.orders", ">"], ["$mq9.AI.>", ">"], [">", ">"], ["*.AI.MSG.SEND.x", ">"], ["$mq9.AI.AGENT.REGISTER", ">"],
    ["$mq9.AI.MSG.SEND", ">"],
  ])("%s → %s", (s, m) => expect(subscribedMailboxes(s)?.join(".") ?? null).toBe(m));
});

describe("decideSubscribe", () => {
  const ok = (allow: string[], deny: string[], subject: string) => decideSubscribe(parseScopes(allow, deny), subject).allowed;
  it.each([
    [[], [], "$mq9.AI.>", true], // no scopes: everything
    [["mq9.send:orders.inbox"], [], "_INBOX.x.*", true], // plain subjects stay open
    [["mq9.send:orders.inbox"], [], "$mq9.AI.MSG.SEND.orders.inbox", false], // send-only: may not watch its own target
    [["mq9.send:orders.inbox"], [], ">", false],
    [["mq9.fetch:orders.inbox"], [], "$mq9.AI.MSG.SEND.orders.inbox", true],
    [["mq9.fetch:orders.inbox/billing"], [], "$mq9.AI.MSG.SEND.orders.inbox", true], // groups do not narrow what a mailbox shows
    [["mq9.fetch:orders.inbox"], [], "$mq9.AI.MSG.SEND.orders.*", false],
    [["mq9.fetch:orders.>"], [], "$mq9.AI.MSG.SEND.orders.*", true],
    [["mq9.*"], [], "$mq9.AI.>", true],
    [["mq9.*"], ["mq9.fetch:secret.>"], "$mq9.AI.>", false], // deny intersects
    [["mq9.*"], ["mq9.fetch:secret.>"], "$mq9.AI.MSG.SEND.orders.x", true],
    [["mq9.*"], ["mq9.fetch:secret.>/g"], "$mq9.AI.MSG.SEND.secret.x", true], // a group deny leaves other groups
    [[], ["mq9.*:secret.>"], "$mq9.AI.MSG.SEND.secret.x", false], // deny only
    [[], ["mq9.*:secret.>"], "$mq9.AI.MSG.SEND.public", true],
    [["mortar.*"], [], "$mq9.AI.MSG.SEND.x", false],
  ])("allow %j deny %j SUB %s → %s", (allow, deny, subject, r) => expect(ok(allow, deny, subject)).toBe(r));

  it("names the operation, the subject and the deciding scope", () => {
    const d = decideSubscribe(parseScopes([], ["mq9.fetch:secret.>"]), "$mq9.AI.>");
    expect(d).toEqual({ allowed: false, reason: 'permission denied: mq9.fetch on the mailboxes of SUB "$mq9.AI.>" (denied by "mq9.fetch:secret.>")' });
  });
});

describe("NatsConnection maySubscribe", () => {
  it("answers a refused SUB like nats-server, subscribes nothing and stays open", () => {
    const conn = new NatsConnection({ maxPayload: 1024, maySubscribe: (s) => !s.startsWith("$mq9.") }, { ...initialState("default"), connected: true, verbose: true });
    const parser = new NatsParser();
    const box = newOutbox();
    for (const op of parser.push(new TextEncoder().encode("SUB $mq9.AI.> 1\r\nSUB $mq9.AI.> q 2\r\nSUB _INBOX.> 3\r\nPUB _INBOX.a 2\r\nhi\r\n")).ops) conn.handle(op, box);
    const text = encodeOut(box.out).map((b) => new TextDecoder().decode(b)).join("");
    expect(text).toBe(
      "-ERR 'Permissions Violation for Subscription to \"$mq9.AI.>\"'\r\n" +
      "-ERR 'Permissions Violation for Subscription to \"$mq9.AI.>\" using queue \"q\"'\r\n" +
      "+OK\r\n+OK\r\nMSG _INBOX.a 3 2\r\nhi\r\n",
    );
    expect(box.close).toBe(false);
    expect(conn.subs.list().map((s) => s.sid)).toEqual(["3"]);
  });
});
