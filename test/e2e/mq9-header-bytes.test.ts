/**
 * `mq9-key` / `mq9-tags` values whose raw bytes are not UTF-8, sent over a
 * real socket to the real local broker (HTTP request head written byte by
 * byte; NATS HPUB through the TCP bridge): refused with 400 / the mq9
 * `error`, nothing stored — they used to arrive as U+FFFD, so the keys
 * `\xE9A` and `\xE8A` were one key and the second SEND deleted the first
 * message (docs/mq9.md, "Header values are UTF-8").
 */
import { connect, type Socket } from "node:net";
import { describe, expect, it } from "vitest";
import { useLocalBroker } from "../fixtures/e2e-broker";
import { until } from "../fixtures/until";

const e2e = useLocalBroker("hdrbytes", { natsBridge: true });

const bytes = (...parts: (string | number[])[]) => Buffer.concat(parts.map((p) => (typeof p === "string" ? Buffer.from(p, "utf8") : Buffer.from(p))));

/** One HTTP/1.1 POST written as raw bytes (extra header lines verbatim); resolves with status and body. */
function rawPost(path: string, headerLines: Buffer[], body: string): Promise<{ status: number; body: unknown }> {
  const url = new URL(e2e.broker.url);
  return new Promise((resolve, reject) => {
    const payload = Buffer.from(body);
    const s = connect(Number(url.port), url.hostname, () => {
      s.end(Buffer.concat([
        bytes(`POST ${path} HTTP/1.1\r\nHost: ${url.host}\r\nConnection: close\r\nContent-Length: ${payload.length}\r\n`),
        ...headerLines.flatMap((h) => [h, bytes("\r\n")]),
        bytes("\r\n"),
        payload,
      ]));
    });
    const chunks: Buffer[] = [];
    s.on("data", (d: Buffer) => chunks.push(d));
    s.on("error", reject);
    s.on("close", () => {
      const text = Buffer.concat(chunks).toString("utf8");
      const [head, ...rest] = text.split("\r\n\r\n");
      resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1]), body: JSON.parse(rest.join("\r\n\r\n")) });
    });
  });
}

async function createMailbox(): Promise<string> {
  const res = await fetch(`${e2e.broker.url}/mq9/$mq9.AI.MAILBOX.CREATE`, { method: "POST", body: "{}" });
  return ((await res.json()) as { mail_address: string }).mail_address;
}

async function query(address: string): Promise<{ key: string | null; tags: string[]; payload: string }[]> {
  const res = await fetch(`${e2e.broker.url}/mq9/$mq9.AI.MSG.QUERY.${address}`, { method: "POST", body: "{}" });
  const body = (await res.json()) as { messages: { key: string | null; tags: string[]; payload: string }[] };
  return body.messages.map((m) => ({ key: m.key, tags: m.tags, payload: Buffer.from(m.payload, "base64").toString() }));
}

const badKey = { error: "mq9-key must be UTF-8 text: it contains bytes that are not UTF-8 (or U+FFFD)" };
const badTags = { error: "mq9-tags must be UTF-8 text: it contains bytes that are not UTF-8 (or U+FFFD)" };

describe("non-UTF-8 bytes in mq9 header values over HTTP (raw request bytes)", () => {
  it("keys \\xE9A and \\xE8A are refused with 400 and nothing is stored or compacted", async () => {
    const address = await createMailbox();
    expect(await rawPost(`/mq9/$mq9.AI.MSG.SEND.${address}`, [], "unrelated")).toEqual({ status: 200, body: { error: "", msg_id: 0 } });
    expect(await rawPost(`/mq9/$mq9.AI.MSG.SEND.${address}`, [bytes("mq9-key: ", [0xe9], "A")], "one")).toEqual({ status: 400, body: badKey });
    expect(await rawPost(`/mq9/$mq9.AI.MSG.SEND.${address}`, [bytes("mq9-key: ", [0xe8], "A")], "two")).toEqual({ status: 400, body: badKey });
    expect(await rawPost(`/mq9/$mq9.AI.MSG.SEND.${address}`, [bytes("mq9-tags: a,", [0xff], ",b")], "three")).toEqual({ status: 400, body: badTags });
    expect(await query(address)).toEqual([{ key: null, tags: [], payload: "unrelated" }]);
  });

  it("UTF-8 keys and tags are stored as the text they encode", async () => {
    const address = await createMailbox();
    expect((await rawPost(`/mq9/$mq9.AI.MSG.SEND.${address}`, [bytes("mq9-key: éA"), bytes("mq9-tags: ü,x")], "one")).status).toBe(200);
    expect((await rawPost(`/mq9/$mq9.AI.MSG.SEND.${address}`, [bytes("mq9-key: èA")], "two")).status).toBe(200);
    expect(await query(address)).toEqual([
      { key: "éA", tags: ["ü", "x"], payload: "one" },
      { key: "èA", tags: [], payload: "two" },
    ]);
  });
});

describe("non-UTF-8 bytes in mq9 header values over NATS (TCP bridge)", () => {
  /** A raw NATS client on the bridge: everything received, as latin1 text. */
  async function natsClient(): Promise<{ s: Socket; text: () => string }> {
    const s = connect(e2e.natsBridge.port, "127.0.0.1");
    let text = "";
    s.on("data", (d: Buffer) => (text += d.toString("latin1")));
    await until(async () => text.startsWith("INFO "), 20_000);
    s.write('CONNECT {"verbose":false,"pedantic":false,"headers":true,"protocol":1}\r\nSUB _INBOX.t.* 1\r\n');
    return { s, text: () => text };
  }

  it("HPUB with key \\xE9A then \\xE8A: both answered with the mq9 error, nothing stored", async () => {
    const address = await createMailbox();
    expect((await rawPost(`/mq9/$mq9.AI.MSG.SEND.${address}`, [bytes("mq9-key: plain")], "unrelated")).status).toBe(200);
    const { s, text } = await natsClient();
    const hpub = (n: number, key: number[]) => {
      const hdr = bytes("NATS/1.0\r\nmq9-key: ", key, "\r\n\r\n");
      return bytes(`HPUB $mq9.AI.MSG.SEND.${address} _INBOX.t.${n} ${hdr.length} ${hdr.length + 3}\r\n`, [...hdr], "abc\r\n");
    };
    s.write(Buffer.concat([hpub(1, [0xe9, 0x41]), hpub(2, [0xe8, 0x41])]));
    await until(async () => text().includes("MSG _INBOX.t.2 ") && text().includes("MSG _INBOX.t.1 "), 10_000);
    const replies = [...text().matchAll(/MSG _INBOX\.t\.(\d) 1 \d+\r\n(.*)\r\n/g)].map((m) => [m[1], JSON.parse(m[2])]);
    expect(new Map(replies as [string, unknown][])).toEqual(new Map([["1", badKey], ["2", badKey]]));
    expect(await query(address)).toEqual([{ key: "plain", tags: [], payload: "unrelated" }]);
    s.destroy();
  });
});
