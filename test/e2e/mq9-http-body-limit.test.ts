/**
 * An over-size request body to `POST /mq9/…` against the real local broker,
 * sent by a real HTTP client (node:http) over a real socket: it is always
 * answered 413 with the JSON `error` (never a 503 from the dev proxy, never
 * a connection reset that swallows the answer), and the answer comes as
 * soon as the limit is crossed — the client still holds the rest of its
 * body when it reads it (docs/mq9.md, "Request bodies over the limit").
 */
import { request, type ClientRequest, type IncomingMessage } from "node:http";
import { describe, expect, it } from "vitest";
import { useLocalBroker } from "../fixtures/e2e-broker";

const MiB = 1024 * 1024;
const e2e = useLocalBroker("bodylimit");

interface Answer { status: number; contentType: string | undefined; body: string }

/** Reads a response to the end. */
function readAnswer(res: IncomingMessage): Promise<Answer> {
  return new Promise((resolve, reject) => {
    let body = "";
    res.setEncoding("utf8");
    res.on("data", (d: string) => (body += d));
    res.on("end", () => resolve({ status: res.statusCode ?? 0, contentType: res.headers["content-type"], body }));
    res.on("error", reject);
  });
}

/**
 * POSTs `first` bytes, then waits for the response (up to `waitMs`) before
 * sending `rest` bytes and ending the request. Resolves with the answer and
 * whether it arrived before the rest was sent. No Content-Length unless
 * `declare` (then the whole size is declared): Node sends chunked.
 */
function post(path: string, first: number, rest: number, opts: { declare?: boolean; waitMs?: number } = {}): Promise<{ answer: Answer; early: boolean }> {
  const url = new URL(e2e.broker.url);
  return new Promise((resolve, reject) => {
    let early = true;
    const headers: Record<string, string> = opts.declare ? { "content-length": String(first + rest) } : {};
    const req: ClientRequest = request({ host: url.hostname, port: url.port, method: "POST", path, headers }, (res) => {
      readAnswer(res).then((answer) => resolve({ answer, early }), reject);
    });
    req.on("error", reject);
    req.write(Buffer.alloc(first, 0x61));
    if (rest === 0) {
      req.end();
      return;
    }
    const timer = setTimeout(() => {
      early = false;
      req.end(Buffer.alloc(rest, 0x62));
    }, opts.waitMs ?? 5000);
    req.once("response", () => {
      clearTimeout(timer);
      if (early) req.end(Buffer.alloc(rest, 0x62));
    });
  });
}

async function createMailbox(): Promise<string> {
  const res = await fetch(`${e2e.broker.url}/mq9/$mq9.AI.MAILBOX.CREATE`, { method: "POST", body: "{}" });
  return ((await res.json()) as { mail_address: string }).mail_address;
}

const tooLarge = (size: string) => JSON.stringify({ error: `payload of ${size} bytes exceeds the limit of 1048576 bytes` });

describe("over-size request bodies (real local broker, node:http)", () => {
  it("a chunked body over 1 MiB is answered 413 JSON every time, and nothing is stored", async () => {
    const address = await createMailbox();
    for (let i = 0; i < 12; i++) {
      const { answer } = await post(`/mq9/$mq9.AI.MSG.SEND.${address}`, 3 * MiB, 0);
      expect(answer).toEqual({ status: 413, contentType: "application/json", body: tooLarge("more than 1048576") });
    }
    const q = await fetch(`${e2e.broker.url}/mq9/$mq9.AI.MSG.QUERY.${address}`, { method: "POST", body: "{}" });
    expect(await q.json()).toEqual({ error: "", messages: [] });
  });

  it("answers at the limit: the 413 arrives while the client still holds the rest of the body", async () => {
    const address = await createMailbox();
    for (let i = 0; i < 3; i++) {
      const { answer, early } = await post(`/mq9/$mq9.AI.MSG.SEND.${address}`, MiB + 64 * 1024, 4 * MiB);
      expect(answer).toEqual({ status: 413, contentType: "application/json", body: tooLarge("more than 1048576") });
      expect(early).toBe(true);
    }
  });

  it("a declared Content-Length over 1 MiB is answered 413 JSON at once, the body unread", async () => {
    const address = await createMailbox();
    for (let i = 0; i < 6; i++) {
      const { answer, early } = await post(`/mq9/$mq9.AI.MSG.SEND.${address}`, 64 * 1024, 3 * MiB, { declare: true });
      expect(answer).toEqual({ status: 413, contentType: "application/json", body: tooLarge(String(3 * MiB + 64 * 1024)) });
      expect(early).toBe(true);
    }
  });

  it("a body of exactly 1 MiB is still stored", async () => {
    const address = await createMailbox();
    const { answer } = await post(`/mq9/$mq9.AI.MSG.SEND.${address}`, MiB, 0);
    expect(answer).toEqual({ status: 200, contentType: "application/json", body: '{"error":"","msg_id":0}' });
  });
});
