/**
 * A tenant purge cut off by a crash of the whole broker (wrangler and its
 * workerd, SIGKILL) resumes when the broker restarts on the same state and
 * finishes: the tenant's topics, mailboxes and usage are gone, and the id,
 * created again, starts empty (docs/tenants.md "Deleting a tenant").
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startLocalBroker, type LocalBroker } from "../../client/local/broker";
import { MortarClient } from "../../client/sdk";
import { crash } from "../fixtures/crash";
import { until } from "../fixtures/until";

const ADMIN = "e2e-purge-admin";
const VARS = { ADMIN_TOKEN: ADMIN, TELEMETRY_FLUSH_MS: "100", TENANT_PURGE_DELAY_MS: "200" };
const PARTITIONS = 48; // 96 with the twin: several steps of 32

let stateDir: string;
let broker: LocalBroker | undefined;

async function call(method: string, path: string, token: string, body?: string): Promise<{ status: number; json: any }> {
  const res = await fetch(`${broker!.url}${path}`, { method, body, headers: { Authorization: `Bearer ${token}` } });
  return { status: res.status, json: await res.json() };
}

beforeAll(async () => {
  stateDir = mkdtempSync(join(tmpdir(), "mortarmq-e2e-purge-"));
  broker = await startLocalBroker({ stateDir, port: 0, vars: VARS });
});

afterAll(async () => {
  if (broker) await crash(broker).catch(() => broker?.stop());
  rmSync(stateDir, { recursive: true, force: true });
});

describe("tenant purge across a broker crash", () => {
  it("resumes after SIGKILL and restart, finishes, and the id starts empty", async () => {
    expect((await call("POST", "/admin/tenants", ADMIN, JSON.stringify({ id: "doomed" }))).status).toBe(201);
    const token = (await call("POST", "/admin/tenants/doomed/tokens", ADMIN, "{}")).json.token as string;
    const client = await MortarClient.connect(broker!.url, { token });
    await client.declare("wide", PARTITIONS);
    for (let p = 0; p < PARTITIONS; p += 7) await client.publish("wide", p, null, `record ${p}`);
    await client.close();
    for (const box of ["box.a", "box.b"]) {
      expect((await call("POST", "/mq9/$mq9.AI.MAILBOX.CREATE", token, JSON.stringify({ name: box }))).json.error).toBe("");
      expect((await call("POST", `/mq9/$mq9.AI.MSG.SEND.${box}`, token, "payload")).json.error).toBe("");
    }
    await until(async () => (await call("GET", "/admin/tenants/doomed/usage", ADMIN)).json.totals.storage_bytes > 0, 10_000, 100);

    expect((await call("DELETE", "/admin/tenants/doomed", ADMIN)).status).toBe(200);
    let mid: any = null;
    await until(async () => {
      const p = (await call("GET", "/admin/tenants/doomed", ADMIN)).json.purge;
      if (p.state === "done") throw new Error("the purge finished before the test could crash the broker");
      if (p.state === "running" && p.purged.partitions > 0) mid = p;
      return mid !== null;
    }, 30_000, 5);
    await crash(broker!);
    broker = await startLocalBroker({ stateDir, port: 0, vars: VARS });

    // Nobody calls the tenant's objects: the tenant object's alarm brings the purge to its end.
    let final: any = null;
    await until(async () => {
      final = (await call("GET", "/admin/tenants/doomed", ADMIN)).json.purge;
      return final.state === "done";
    }, 60_000, 100);
    expect(final.purged.partitions).toBeGreaterThanOrEqual(mid.purged.partitions);
    expect(final.purged.partitions).toBeGreaterThanOrEqual(2 * PARTITIONS);
    expect(final.purged.mailboxes).toBe(2);
    expect(final.estimated).toEqual({ groups: 0, partitions: 2 * PARTITIONS, mailboxes: 2 });
    expect((await call("GET", "/admin/tenants/doomed/usage", ADMIN)).json.totals.storage_bytes).toBe(0);

    expect((await call("POST", "/admin/tenants", ADMIN, JSON.stringify({ id: "doomed" }))).status).toBe(201);
    const fresh = (await call("POST", "/admin/tenants/doomed/tokens", ADMIN, "{}")).json.token as string;
    expect((await call("GET", "/stats", fresh)).json).toMatchObject({ tenant: "doomed", topics: [], agents: 0 });
    expect((await call("POST", "/mq9/$mq9.AI.MSG.QUERY.box.a", fresh, "{}")).json.error).toBe("mailbox box.a does not exist");
    expect((await call("GET", "/stats", token)).status).toBe(401); // the old token is unknown
    const again = await MortarClient.connect(broker!.url, { token: fresh });
    await again.declare("wide", PARTITIONS);
    const stats = (await call("GET", "/stats", fresh)).json;
    expect(stats.topics[0].partitions.every((p: { high_watermark: number }) => p.high_watermark === 0)).toBe(true);
    await again.close();
  });
});
