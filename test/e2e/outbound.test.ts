/**
 * The local Worker's outbound network (client/local/outbound.ts, issue 28
 * item 7): workerd, as the local broker configures it, connects only to
 * public addresses, checking the address a name resolves to — `localhost`
 * is refused like `127.0.0.1` (the way a public name resolving to loopback,
 * `127.0.0.1.nip.io`, is refused; this test needs no DNS beyond the
 * machine's). With PUSH_ALLOW_LOOPBACK=1 both are reached. A one-line
 * Worker in Miniflare fetches a receiver on this machine.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Readable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Miniflare } from "miniflare";
import { outboundNetwork } from "../../client/local/outbound";

const SCRIPT = `export default { async fetch(req) {
  try { const r = await fetch(new URL(req.url).searchParams.get("to")); return new Response("status " + r.status); }
  catch (e) { return new Response("error " + e.message, { status: 502 }); }
} };`;

let receiver: Server;
let port = 0;
let hits = 0;

beforeAll(async () => {
  receiver = createServer((_req, res) => {
    hits++;
    res.end("ok");
  });
  await new Promise<void>((r) => receiver.listen(0, "127.0.0.1", r));
  port = (receiver.address() as AddressInfo).port;
});

afterAll(async () => {
  await new Promise((r) => receiver.close(r));
});

/** What the Worker with the outbound network of `vars` answers for a fetch of each of `targets`. */
async function fetchesWith(vars: Record<string, string>, targets: string[]): Promise<string[]> {
  const mf = new Miniflare({
    modules: true, script: SCRIPT, outboundService: await outboundNetwork(vars), cf: false,
    handleRuntimeStdio: (out: Readable, err: Readable) => { // workerd logs each refused connect() ("blocked by restrictPeers()"): expected here
      out.resume();
      err.resume();
    },
  });
  try {
    const out: string[] = [];
    for (const t of targets) out.push(await (await mf.dispatchFetch(`http://w/?to=${encodeURIComponent(t)}`)).text());
    return out;
  } finally {
    await mf.dispose();
  }
}

describe("the local Worker's outbound fetch (#28 item 7)", () => {
  it("reaches no loopback address, named or not, unless PUSH_ALLOW_LOOPBACK=1", async () => {
    const targets = [`http://127.0.0.1:${port}/`, `http://localhost:${port}/`];
    const refused = await fetchesWith({}, targets);
    expect(refused.every((r) => r.startsWith("error "))).toBe(true);
    expect(hits).toBe(0);
    expect(await fetchesWith({ PUSH_ALLOW_LOOPBACK: "1" }, targets)).toEqual(["status 200", "status 200"]);
    expect(hits).toBe(2);
  });

  it("reaches the EMBEDDINGS_URL host (an embeddings server on this machine) and only its addresses", async () => {
    const allow = (await outboundNetwork({ EMBEDDINGS_URL: `http://127.0.0.1:${port}/v1` })).network.allow;
    expect(allow).toEqual(["public", "127.0.0.1/32"]);
    expect(await fetchesWith({ EMBEDDINGS_URL: `http://127.0.0.1:${port}/v1` }, [`http://127.0.0.1:${port}/`])).toEqual(["status 200"]);
  });
});
