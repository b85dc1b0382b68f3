/**
 * `mortarmq admin …` (the real binary) against a real hosted-mode broker
 * (mortarmq dev with ADMIN_TOKEN): a tenant's whole life — create, issue a
 * token, use it, quotas, usage, revoke, delete — with exit codes, `--json`
 * and the errors an operator meets (docs/tenants.md, docs/cli.md "Admin").
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { toWebSocketUrl } from "../../client/bridge/tunnel";
import { startLocalBroker, type LocalBroker } from "../../client/local/broker";
import { runCli, type CliRun as Run } from "../fixtures/cli-run";

const ADMIN = "e2e-admin-cli-token";
let broker: LocalBroker;
let dir: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "mortarmq-e2e-admin-"));
  broker = await startLocalBroker({ stateDir: join(dir, "state"), port: 0, vars: { ADMIN_TOKEN: ADMIN, TELEMETRY_FLUSH_MS: "200" } });
});

afterAll(async () => {
  await broker?.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** Runs the CLI against the broker; `admin`: MORTARMQ_ADMIN_TOKEN set. */
function cli(args: string[], env: Record<string, string> = {}, admin = true): Promise<Run> {
  return runCli(args, { MORTARMQ_URL: broker.url, MORTARMQ_TOKEN: "", MORTARMQ_ADMIN_TOKEN: admin ? ADMIN : "", ...env });
}

async function json<T = any>(args: string[], env: Record<string, string> = {}): Promise<T> {
  const r = await cli([...args, "--json"], env);
  expect(r.stderr).toBe("");
  expect(r.code).toBe(0);
  return JSON.parse(r.stdout) as T;
}

describe("mortarmq admin", () => {
  it("--token carries the operator token when no --admin-token is given (it was ignored: 'missing bearer token')", async () => {
    const listed = await cli(["admin", "tenants", "list", "--token", ADMIN], {}, false);
    expect(listed).toMatchObject({ code: 0, stderr: "" });
    const none = await cli(["admin", "tenants", "list"], {}, false);
    expect(none.code).toBe(1);
    expect(none.stderr).toBe("mortarmq: UNAUTHORIZED (HTTP 401): unauthorized: missing bearer token\n  what to do: pass the operator token with --admin-token (or --token), or MORTARMQ_ADMIN_TOKEN\n");
  });

  it("tenant lifecycle: create, issue, use, quotas, usage, revoke, delete", async () => {
    const created = await cli(["admin", "tenants", "create", "acme", "--name", "Acme Corp"]);
    expect(created).toMatchObject({ code: 0, stderr: "" });
    expect(created.stdout).toMatch(/created tenant acme/);

    const issued = await json(["admin", "tokens", "issue", "acme", "--label", "ci"]);
    expect(issued).toMatchObject({ tenant: "acme", label: "ci" });
    const token = issued.token as string;
    expect(token).toMatch(/^mmq\.acme\.[0-9a-f]{12}\./);

    // The issued token works on MortarMQ (topics create) and mq9 over HTTP.
    expect((await cli(["topics", "create", "orders", "--partitions", "2", "--token", token])).code).toBe(0);
    expect((await json(["mq9", "create", "box.one", "--token", token])).mail_address).toBe("box.one");

    const q = await json(["admin", "quotas", "set", "acme", "--mailboxes", "1", "--storage-bytes", "10MiB", "--partitions", "2"]);
    expect(q).toEqual({ tenant: "acme", quotas: { publish_msgs_per_s: null, publish_bytes_per_s: null, storage_bytes: 10 * 1024 * 1024, connections: null, mailboxes: 1, mailbox_creates_per_s: null, partitions: 2 } });
    const shown = await cli(["admin", "quotas", "show", "acme"]);
    expect(shown.stdout).toMatch(/mailboxes:\s+1\n/);
    expect(shown.stdout).toMatch(/partitions:\s+2\n/);
    // "orders" holds the tenant's 2 partitions: another topic is refused (QUOTA_EXCEEDED)
    const more = await cli(["topics", "create", "more", "--partitions", "1", "--token", token]);
    expect(more.code).not.toBe(0);
    expect(more.stderr).toContain(`partition quota exceeded: the tenant's topics have 2 partitions, quota 2; topic "more" with 1 partition was not created`);
    expect(shown.stdout).toMatch(/connections:\s+unlimited/);
    // The first mailbox is in the pipeline's count within a flush (200 ms); a second one is over the quota.
    let over: Run | undefined;
    for (let i = 0; i < 20 && over?.code !== 1; i++) {
      over = await cli(["mq9", "create", `box.n${i}`, "--token", token]);
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(over!.code).toBe(1);
    expect(over!.stderr).toMatch(/mailbox quota exceeded/);

    const list = await json(["admin", "tenants", "list"]);
    expect(list.tenants).toContainEqual(expect.objectContaining({ id: "acme", name: "Acme Corp", source: "directory", deleted_at: null }));
    const show = await cli(["admin", "tenants", "show", "acme"]);
    expect(show.stdout).toContain(issued.token_id);
    expect(show.stdout).not.toContain(token);

    const usage = await json(["admin", "usage", "acme"]);
    expect(usage.tenant).toBe("acme");
    expect(usage.totals.requests).toBeGreaterThan(0);
    expect(usage.totals.rows_written).toBeGreaterThan(0); // what the tenant cost (docs/tenants.md "What a tenant costs")
    expect(usage.totals.do_requests).toBeGreaterThan(0);
    const text = (await cli(["admin", "usage", "acme"])).stdout;
    expect(text).toMatch(/^usage of acme from /);
    expect(text).toMatch(/ROWS WRITTEN +ROWS READ +DO REQUESTS/);

    // A token with an expiry; the list shows expiry and last use.
    const expiring = await json(["admin", "tokens", "issue", "acme", "--label", "temp", "--expires-in", "1h"]);
    expect(Date.parse(expiring.expires_at) - Date.now()).toBeGreaterThan(3_500_000);
    const tokens = await json(["admin", "tokens", "list", "acme"]);
    expect(tokens.tokens).toEqual(expect.arrayContaining([
      expect.objectContaining({ token_id: issued.token_id, expires_at: null, last_used_at: expect.any(String), revoked_at: null }),
      expect.objectContaining({ token_id: expiring.token_id, label: "temp", expires_at: expiring.expires_at, last_used_at: null }),
    ]));
    const listedText = (await cli(["admin", "tokens", "list", "acme"])).stdout;
    expect(listedText).toMatch(/^TOKEN ID\s+LABEL\s+STATE\s+CREATED\s+EXPIRES\s+LAST USED\s+REVOKED\s+SCOPES\n/);
    expect(listedText).toMatch(new RegExp(`${expiring.token_id}\\s+temp\\s+active\\s+\\S+\\s+${expiring.expires_at.replace(/[.]/g, "\\.")}\\s+never\\s+-`));
    expect((await cli(["admin", "tokens", "issue", "acme", "--expires-in", "3y"])).stderr).toMatch(/^mortarmq: USAGE: --expires-in must be a duration/);

    const revoked = await cli(["admin", "tokens", "revoke", "acme", issued.token_id]);
    expect(revoked).toMatchObject({ code: 0, stderr: "" });
    const refused = await cli(["mq9", "create", "box.two", "--token", token]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/token revoked/);

    const deleted = await cli(["admin", "tenants", "delete", "acme"]);
    expect(deleted.code).toBe(0);
    expect(deleted.stdout).toMatch(/^deleted tenant acme: 2 token\(s\) revoked; its data is purged from \S+ \(see mortarmq admin tenants describe acme\)\n$/);
    const described = await cli(["admin", "tenants", "describe", "acme"]);
    expect(described.stdout).toMatch(/purge:\s+waiting until \S+ \(open connections close first\)\n/);
    expect((await json(["admin", "tenants", "show", "acme"])).purge).toMatchObject({ state: "waiting", purged: { partitions: 0 } });
    const again = await cli(["admin", "tenants", "create", "acme", "--json"]);
    expect(again.code).toBe(1);
    expect(JSON.parse(again.stderr).error).toMatchObject({ name: "CONFLICT", status: 409, message: expect.stringMatching(/still being purged/) });
  });

  it("errors: no operator token, a tenant's token, unknown tenants, bad flags", async () => {
    const none = await cli(["admin", "tenants", "list"], {}, false);
    expect(none.code).toBe(1);
    expect(none.stderr).toMatch(/^mortarmq: UNAUTHORIZED \(HTTP 401\): unauthorized: missing bearer token\n  what to do: pass the operator token/);
    await cli(["admin", "tenants", "create", "beta"]);
    const t = await json(["admin", "tokens", "issue", "beta"]);
    const forbidden = await cli(["admin", "tenants", "list", "--admin-token", t.token], {}, false);
    expect(forbidden.code).toBe(1);
    expect(forbidden.stderr).toMatch(/FORBIDDEN \(HTTP 403\)/);
    const missing = await cli(["admin", "tenants", "show", "nobody", "--json"]);
    expect(missing.code).toBe(1);
    expect(JSON.parse(missing.stderr).error).toMatchObject({ name: "NOT_FOUND", status: 404, message: "tenant nobody does not exist" });
    for (const args of [["admin", "quotas", "set", "beta"], ["admin", "quotas", "set", "beta", "--connections", "0"],
      ["admin", "tenants", "create", "Bad Id"], ["admin", "tokens", "revoke", "beta", "xyz"]]) {
      const r = await cli(args);
      expect([args.join(" "), r.code]).toEqual([args.join(" "), 1]);
      expect(r.stderr).toMatch(/^mortarmq: USAGE: /);
    }
  });

  it("--expires-in is a whole number of seconds: a fraction of a second is refused, not rounded; a fraction of a larger unit is exact", async () => {
    await cli(["admin", "tenants", "create", "delta"]);
    for (const v of ["1.5", "1500ms", "90.5s"]) {
      const r = await cli(["admin", "tokens", "issue", "delta", "--expires-in", v]);
      expect([v, r.code, r.stderr.split("\n")[0]]).toEqual([v, 1, `mortarmq: USAGE: --expires-in must be a whole number of seconds, not ${v}`]);
    }
    const before = Date.now();
    const t = await json(["admin", "tokens", "issue", "delta", "--expires-in", "1.5h"]);
    expect(Date.parse(t.expires_at) - before).toBeGreaterThanOrEqual(5_400_000 - 1_000);
    expect(Date.parse(t.expires_at) - Date.now()).toBeLessThanOrEqual(5_400_000);
  });
});

/** The operator's admin API call; the JSON answer. */
async function adminApi(method: string, path: string, body?: unknown): Promise<any> {
  const r = await fetch(broker.url + path, {
    method,
    headers: { Authorization: `Bearer ${ADMIN}`, "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  expect(r.status).toBeLessThan(300);
  return r.json();
}

describe("quotas and request order (real runtime)", () => {
  // The workers pool can reorder RPCs into a Durable Object (docs/testing.md), so this is checked here.
  it("mq9 over NATS under rate, storage and mailbox quotas: CREATE, SEND, SEND, QUERY pipelined on one connection take effect in order", async () => {
    await adminApi("POST", "/admin/tenants", {
      id: "ordered",
      quotas: { publish_msgs_per_s: 100_000, storage_bytes: 1_000_000_000, mailboxes: 1_000 },
    });
    const { token } = await adminApi("POST", "/admin/tenants/ordered/tokens", {});
    (globalThis as { WebSocket?: unknown }).WebSocket = WebSocket;
    const { connect } = await import("nats.ws");
    const nc = await connect({ servers: toWebSocketUrl(broker.url, "nats"), token, reconnect: false });
    const te = new TextEncoder();
    try {
      for (let i = 0; i < 5; i++) {
        // the CREATE asks the tenant's object (mailbox quota); the first SEND waits for a rate lease
        const mbox = `quota.order.${i}`;
        nc.publish("$mq9.AI.MAILBOX.CREATE", te.encode(JSON.stringify({ name: mbox })));
        nc.publish(`$mq9.AI.MSG.SEND.${mbox}`, te.encode("first"));
        nc.publish(`$mq9.AI.MSG.SEND.${mbox}`, te.encode("second"));
        const m = await nc.request(`$mq9.AI.MSG.QUERY.${mbox}`, te.encode("{}"), { timeout: 10_000 });
        const q = JSON.parse(new TextDecoder().decode(m.data)) as { error: string; messages: { payload: string }[] };
        expect(q.error).toBe("");
        expect(q.messages.map((x) => Buffer.from(x.payload, "base64").toString())).toEqual(["first", "second"]);
      }
    } finally {
      await nc.close();
    }
  });
});

describe("mortarmq groups (real binary, a tenant's token)", () => {
  it("list, describe, reset, pause, resume and delete a consumer group", async () => {
    await adminApi("POST", "/admin/tenants", { id: "gamma" });
    const { token } = await adminApi("POST", "/admin/tenants/gamma/tokens", {});
    const as = (args: string[]) => cli([...args, "--token", token]);
    const asJson = async (args: string[]) => {
      const r = await as([...args, "--json"]);
      expect([args.join(" "), r.stderr, r.code]).toEqual([args.join(" "), "", 0]);
      return JSON.parse(r.stdout);
    };
    expect((await as(["topics", "create", "jobs", "--partitions", "2"])).code).toBe(0);
    expect((await as(["pub", "jobs", "--partition", "0", "one"])).code).toBe(0);
    expect((await as(["pub", "jobs", "--partition", "0", "two"])).code).toBe(0);
    expect((await as(["sub", "jobs", "--group", "workers", "--count", "1"])).code).toBe(0);

    expect((await as(["groups", "list", "jobs"])).stdout).toMatch(/^GROUP\s+MEMBERS\s+LAG\s+IN FLIGHT\s+PAUSED UNTIL\nworkers\s+0\s+1\s+0\s+-\n$/);
    const d = await asJson(["groups", "describe", "jobs", "workers"]);
    expect(d).toMatchObject({ tenant: "gamma", topic: "jobs", group: "workers", lag: 1, members: [], partitions: [{ partition: 0, committed_floor: 1, high_watermark: 2 }, { partition: 1 }] });
    expect((await as(["groups", "describe", "jobs", "workers"])).stdout).toMatch(/^group:\s+workers\ntopic:\s+jobs \(topic id 1, 2 partitions\)\n/);

    const reset = await asJson(["groups", "reset", "jobs", "workers", "--to", "earliest", "--partition", "0"]);
    expect(reset.partitions).toEqual([{ partition: 0, next_sequence: 1, committed_floor: 0, pending: false }]);
    expect((await as(["groups", "reset", "jobs", "workers", "--to", "latest"])).stdout).toMatch(/^reset group workers of topic jobs to latest\n/);
    const paused = await asJson(["groups", "pause", "jobs", "workers", "--until", "2h"]);
    expect(Date.parse(paused.paused_until) - Date.now()).toBeGreaterThan(7_000_000);
    expect((await as(["groups", "list", "jobs"])).stdout).toContain(paused.paused_until);
    expect((await as(["groups", "resume", "jobs", "workers"])).stdout).toBe("resumed group workers of topic jobs\n");
    // a time of day without a zone is refused (it would be read in this machine's zone); a date alone is UTC midnight
    const local = await as(["groups", "pause", "jobs", "workers", "--until", "2099-05-02T10:00"]);
    expect([local.code, local.stderr.split("\n")[0]]).toEqual([1,
      'mortarmq: USAGE: --until "2099-05-02T10:00" has no time zone: add Z (UTC) or an offset, e.g. 2099-05-02T10:00Z or 2099-05-02T10:00+02:00']);
    const zoned = await asJson(["groups", "pause", "jobs", "workers", "--until", "2099-05-02T10:00+02:00"]);
    expect(zoned.paused_until).toBe("2099-05-02T08:00:00.000Z");
    expect((await asJson(["groups", "pause", "jobs", "workers", "--until", "2099-05-02"])).paused_until).toBe("2099-05-02T00:00:00.000Z");
    expect((await as(["groups", "resume", "jobs", "workers"])).code).toBe(0);
    expect((await as(["groups", "delete", "jobs", "workers"])).stdout).toBe("deleted group workers of topic jobs\n");

    const missing = await as(["groups", "describe", "jobs", "workers", "--json"]);
    expect(missing.code).toBe(1);
    expect(JSON.parse(missing.stderr).error).toMatchObject({ name: "NOT_FOUND", status: 404, message: 'consumer group "workers" does not exist' });
    for (const args of [["groups", "reset", "jobs", "g", "--to", "offset:3"], ["groups", "pause", "jobs", "g", "--until", "soon"], ["groups", "reset", "jobs", "g", "--to", "earliest", "--partition", "x"]]) {
      const r = await as(args);
      expect([args.join(" "), r.code, r.stderr]).toEqual([args.join(" "), 1, expect.stringMatching(/^mortarmq: USAGE: /)]);
    }
    // Another tenant's token sees no such topic; the operator token reaches it with --tenant.
    expect((await cli(["groups", "list", "jobs", "--tenant", "gamma"], { MORTARMQ_TOKEN: ADMIN })).stdout).toBe("no consumer groups on topic jobs\n");
  });
});
