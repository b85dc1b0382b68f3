/**
 * QA scenario against the real local broker (mortarmq dev): 1,000 long-poll
 * FETCHes (max_wait_ms 30000) whose client goes away after 1.5 s must not
 * keep the mailbox's 1,000 long-poll slots for 30 s. Here the client is the
 * real `nats` client over the TCP bridge, closing its connection; the
 * NatsSession releases its held FETCHes. (An HTTP client's disconnect is
 * seen through Request.signal in the workers-pool test; local workerd does
 * not pass it on to Request.signal, see docs/mq9.md.)
 */
import { connect } from "nats";
import { until } from "../fixtures/until";
import { describe, expect, it } from "vitest";
import { useLocalBroker } from "../fixtures/e2e-broker";

const e2e = useLocalBroker("longpoll", { natsBridge: true });
const te = new TextEncoder();

async function http(subject: string, body: string): Promise<{ status: number; text: string }> {
  const res = await fetch(`${e2e.broker.url}/mq9/${subject}`, { method: "POST", body });
  return { status: res.status, text: await res.text() };
}

/** Status of a 1 ms long-poll FETCH: 429 while every slot of the mailbox is held. */
const probe = async (address: string) => (await http(`$mq9.AI.MSG.FETCH.${address}`, JSON.stringify({ config: { max_wait_ms: 1 } }))).status;


describe("long-poll slots of departed clients (local broker)", () => {
  it("1000 FETCHes of NATS clients that disconnect after 1.5 s free their slots at once", async () => {
    const address = "longpoll.release";
    expect((await http("$mq9.AI.MAILBOX.CREATE", JSON.stringify({ name: address, ttl: 0 }))).status).toBe(200);
    // four connections of 250: one connection runs at most MAX_RUNNING_REQUESTS (256) requests at once (docs/nats.md "Slow consumers")
    const conns = await Promise.all(Array.from({ length: 4 }, () => connect({ servers: `127.0.0.1:${e2e.natsBridge.port}`, reconnect: false })));
    const body = te.encode(JSON.stringify({ config: { max_wait_ms: 30_000 } }));
    const requests = conns.flatMap((nc) => Array.from({ length: 250 }, () => nc.request(`$mq9.AI.MSG.FETCH.${address}`, body, { timeout: 60_000 }).then(() => "answered", () => "gone")));
    await new Promise((r) => setTimeout(r, 1500));
    await until(async () => (await probe(address)) === 429, 20_000, 250); // all 1000 slots held
    await Promise.all(conns.map((nc) => nc.close()));
    expect(new Set(await Promise.all(requests))).toEqual(new Set(["gone"]));
    const t0 = Date.now();
    await until(async () => (await probe(address)) === 200, 10_000, 250); // not 30 s
    expect(Date.now() - t0).toBeLessThan(10_000);
    expect(await http(`$mq9.AI.MSG.FETCH.${address}`, JSON.stringify({ config: { max_wait_ms: 200 } }))).toEqual({ status: 200, text: '{"error":"","messages":[]}' });
  });
});
