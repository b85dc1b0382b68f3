/**
 * Runs in a real browser (test/e2e/mq9-client-browser.test.ts bundles it
 * with esbuild for the browser): the mq9 client as a web page uses it,
 * imported by its package name, against a broker on another origin.
 */
import { Mq9Client, Mq9ClientError, type Mq9TransportName } from "@mortarmq/mq9";

/** A failed call's kind and source, or "no error". */
async function failure(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
    return "no error";
  } catch (e) {
    return e instanceof Mq9ClientError ? { kind: e.kind, source: e.source, message: e.message } : { thrown: String(e) };
  }
}

function suffix(): string {
  return Array.from(crypto.getRandomValues(new Uint8Array(6)), (b) => b.toString(16).padStart(2, "0")).join("");
}

/** Every kind of call once; the results as JSON-friendly values. */
async function scenario(url: string, token: string, transport: Mq9TransportName): Promise<Record<string, unknown>> {
  const out: Record<string, unknown> = {};
  const mq = await Mq9Client.connect(url, { token, transport });
  out.transport = mq.transport;
  const box = `web.${suffix()}`;
  out.create = (await mq.createMailbox({ name: box, ttl: 600 })).mailAddress === box;
  out.sendText = await mq.send(box, "héllo from a page", { priority: "urgent", tags: ["web"], replyTo: `${box}.replies`, correlationId: "page-1" });
  out.sendBytes = await mq.send(box, new Uint8Array([0, 1, 2, 250, 255]));
  const got = await mq.fetch(box, { group: "page", deliver: "earliest", maxWaitMs: 0 });
  out.fetched = got.map((m) => [m.msgId, m.priority, m.tags, m.replyTo, m.correlationId, Array.from(m.payload)]);
  out.text = got[0]?.text();
  await got[got.length - 1]!.ack();
  out.afterAck = (await mq.fetch(box, { group: "page", maxWaitMs: 0 })).length;
  out.queryCorrelation = (await mq.query(box, { correlationId: "page-1" })).map((m) => m.msgId);
  out.duplicate = await failure(mq.createMailbox({ name: box }));
  out.missing = await failure(mq.fetch(`${box}.nobody`, { maxWaitMs: 0 }));

  // a service and its caller in the same page: consume() answers, request() waits for the answer
  const service = `${box}.service`;
  await mq.createMailbox({ name: service, ttl: 600 });
  const consumer = mq.consume(service, { group: "svc", deliver: "earliest", maxWaitMs: 2000 });
  const serving = (async () => {
    for await (const m of consumer) {
      await m.reply(`pong: ${m.text()}`);
      await m.ack();
      consumer.close();
    }
  })();
  const answer = await mq.request(service, "ping", { timeoutMs: 15_000 });
  await serving;
  out.request = [answer.text(), /^[0-9a-f]{32}$/.test(answer.correlationId ?? "")];

  const agent = `web.agent.${suffix()}`;
  await mq.agents.register({ name: agent, mailbox: `mq9://broker/${service}`, description: "answers pings from web pages" });
  out.discover = (await mq.agents.discover({ text: "pings web pages" })).map((a) => a.name).includes(agent);
  out.unregister = await mq.agents.unregister({ name: agent });
  await mq.close();
  return out;
}

/** One call, to see how a refused request looks from this origin. */
async function probe(url: string, token: string): Promise<unknown> {
  const mq = await Mq9Client.connect(url, { token });
  return failure(mq.query("web.probe"));
}

Object.assign(globalThis, { mq9Scenario: scenario, mq9Probe: probe });
