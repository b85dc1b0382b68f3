/**
 * A NATS client that never reads (issue 28 item 5, docs/nats.md "Slow
 * consumers"): a real TCP client on the bridge pipelines requests for an
 * ~80 KB reply each and reads nothing. The bridge stops taking its requests
 * once it cannot deliver the answers, the broker's flow-control PING goes
 * unanswered, and the broker closes the connection with
 * `-ERR 'Slow Consumer'` after NATS_WRITE_DEADLINE_MS — while /healthz keeps
 * answering. Bounded sizes: 2,000 requests that would ask ~160 MB back.
 */
import { createConnection, type Socket } from "node:net";
import { describe, expect, it } from "vitest";
import { useLocalBroker } from "../fixtures/e2e-broker";

const ctx = useLocalBroker("nats-slow", { vars: { NATS_WRITE_DEADLINE_MS: "1000", NATS_MAX_PENDING_BYTES: String(8 * 1024 * 1024) }, natsBridge: true });

async function mq9(subject: string, body: unknown): Promise<{ error: string } & Record<string, unknown>> {
  const res = await fetch(`${ctx.broker.url}/mq9/${subject}`, { method: "POST", body: typeof body === "string" ? body : JSON.stringify(body) });
  return (await res.json()) as { error: string };
}

describe("NATS slow consumer", () => {
  it("a TCP client that pipelines requests and never reads is closed with -ERR 'Slow Consumer'; the broker stays responsive", async () => {
    const box = `slow.${Date.now().toString(36)}`;
    expect((await mq9("$mq9.AI.MAILBOX.CREATE", { name: box })).error).toBe("");
    expect((await mq9(`$mq9.AI.MSG.SEND.${box}`, "x".repeat(60_000))).error).toBe("");

    const s: Socket = await new Promise((resolve, reject) => {
      const c = createConnection({ host: "127.0.0.1", port: ctx.natsBridge.port }, () => resolve(c));
      c.once("error", reject);
    });
    s.pause(); // reads nothing (the INFO included) until told
    const ended = new Promise<void>((r) => s.once("end", () => r()));
    const requests = 2000;
    let wire = 'CONNECT {"verbose":false,"headers":true}\r\nSUB _INBOX.slow.* 1\r\n';
    for (let i = 0; i < requests; i++) wire += `PUB $mq9.AI.MSG.QUERY.${box} _INBOX.slow.${i} 2\r\n{}\r\n`;
    s.write(wire);

    // the broker answers everyone else meanwhile
    for (let i = 0; i < 5; i++) {
      expect((await fetch(`${ctx.broker.url}/healthz`)).status).toBe(200);
      await new Promise((r) => setTimeout(r, 400));
    }

    // now read what was sent: some answers, then the slow-consumer error and the end of the stream
    const chunks: Buffer[] = [];
    s.on("data", (d: Buffer) => chunks.push(d));
    s.resume();
    await ended;
    const text = Buffer.concat(chunks).toString("latin1");
    expect(text.startsWith("INFO ")).toBe(true);
    expect(text.endsWith("-ERR 'Slow Consumer'\r\n")).toBe(true);
    expect(text).toContain("PING\r\n"); // the flow-control PING it never answered
    const answered = text.split("MSG _INBOX.slow.").length - 1;
    expect(answered).toBeGreaterThan(0);
    expect(answered).toBeLessThan(requests); // it stopped answering a client that does not read
    s.destroy();
  });
});
