/**
 * Request bodies sent with `Content-Encoding` (docs/operations.md
 * "Compressed request bodies"; worker/body-limit.ts): gzip and deflate are
 * decoded before use — a payload is stored as its decoded bytes, not as
 * the gzip stream — bounded by the route's limit after decoding (a small
 * "zip bomb" is refused without being inflated past it); another encoding
 * is 415 and invalid data 400, nothing stored.
 */
import { SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";

/** `text` compressed with `format`. */
async function compress(bytes: Uint8Array, format: "gzip" | "deflate"): Promise<Uint8Array> {
  const stream = new Blob([bytes as Uint8Array<ArrayBuffer>]).stream().pipeThrough(new CompressionStream(format));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

const te = new TextEncoder();

async function mq9(subject: string, body: Uint8Array | string, headers: Record<string, string> = {}): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await SELF.fetch(`http://broker/mq9/${subject}`, { method: "POST", body, headers });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

async function payloads(box: string): Promise<string[]> {
  const q = await mq9(`$mq9.AI.MSG.QUERY.${box}`, "{}");
  return (q.body.messages as { payload: string }[]).map((m) => atob(m.payload));
}

describe("Content-Encoding on request bodies", () => {
  it("a gzip or deflate mq9 payload is stored decoded", async () => {
    expect((await mq9("$mq9.AI.MAILBOX.CREATE", JSON.stringify({ name: "gz.box" }))).status).toBe(200);
    for (const format of ["gzip", "deflate"] as const) {
      const sent = await mq9("$mq9.AI.MSG.SEND.gz.box", await compress(te.encode(`hello ${format}`), format), { "Content-Encoding": format });
      expect(sent.status).toBe(200);
    }
    const sent = await mq9("$mq9.AI.MSG.SEND.gz.box", await compress(te.encode("hello x-gzip"), "gzip"), { "Content-Encoding": "X-GZIP" });
    expect(sent.status).toBe(200);
    expect(await payloads("gz.box")).toEqual(["hello gzip", "hello deflate", "hello x-gzip"]);
  });

  it("a body that inflates past the limit is 413 without being inflated further; nothing stored", async () => {
    expect((await mq9("$mq9.AI.MAILBOX.CREATE", JSON.stringify({ name: "gz.bomb" }))).status).toBe(200);
    const bomb = await compress(new Uint8Array(64 * 1024 * 1024), "gzip"); // 64 MiB of zeros: ~64 KiB sent
    expect(bomb.byteLength).toBeLessThan(128 * 1024);
    const r = await mq9("$mq9.AI.MSG.SEND.gz.bomb", bomb, { "Content-Encoding": "gzip" });
    expect(r).toEqual({ status: 413, body: { error: "payload of more than 1048576 bytes exceeds the limit of 1048576 bytes" } });
    expect(await payloads("gz.bomb")).toEqual([]);
  });

  it("another encoding is 415 and data that is not gzip is 400; nothing stored", async () => {
    expect((await mq9("$mq9.AI.MAILBOX.CREATE", JSON.stringify({ name: "gz.bad" }))).status).toBe(200);
    expect(await mq9("$mq9.AI.MSG.SEND.gz.bad", "hello", { "Content-Encoding": "br" })).toEqual({
      status: 415, body: { error: 'Content-Encoding "br" is not supported: send the body uncompressed, or with gzip or deflate' },
    });
    expect(await mq9("$mq9.AI.MSG.SEND.gz.bad", "not gzip at all", { "Content-Encoding": "gzip" })).toEqual({
      status: 400, body: { error: "body is not valid gzip data (Content-Encoding: gzip)" },
    });
    expect(await mq9("$mq9.AI.MSG.SEND.gz.bad", "plain", { "Content-Encoding": "identity" })).toMatchObject({ status: 200 });
    expect(await payloads("gz.bad")).toEqual(["plain"]);
  });

  it("the console and admin JSON routes decode too", async () => {
    const body = await compress(te.encode(JSON.stringify({ name: "gz-topic", partitions: 2 })), "gzip");
    const res = await SELF.fetch("http://broker/v0/topics", { method: "POST", body, headers: { "Content-Type": "application/json", "Content-Encoding": "gzip" } });
    expect(res.status).toBe(201);
    expect(await res.json()).toMatchObject({ name: "gz-topic", partition_count: 2 });
    const br = await SELF.fetch("http://broker/v0/topics", { method: "POST", body: "{}", headers: { "Content-Encoding": "br" } });
    expect(br.status).toBe(415);
  });
});
