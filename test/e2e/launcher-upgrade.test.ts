/**
 * Upgrading the local runtime loses nothing: a state directory written by
 * the earlier launcher (`wrangler dev --persist-to`, kept as
 * `launcher: "wrangler"` for this test and the benchmarks) is read as is by
 * `mortarmq dev` (the Worker in Miniflare). Checked after the switch:
 * topics and their high watermarks, a consumer group's committed floors (it
 * resumes exactly after what it acked), an idempotent producer's dedupe
 * state, mailbox messages and an mq9 group's position — and the Durable
 * Object storage stays in the directories wrangler dev wrote.
 */
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { startLocalBroker, type LocalBroker } from "../../client/local/broker";
import { sqliteHoldsNothing } from "../../client/local/sqlite-empty";
import { MortarClient, type Message } from "../../client/sdk";

const stateDir = mkdtempSync(join(tmpdir(), "mortarmq-e2e-upgrade-"));
let broker: LocalBroker | undefined;
afterAll(async () => {
  await broker?.stop();
  rmSync(stateDir, { recursive: true, force: true });
});

const post = async (subject: string, body: string) =>
  (await fetch(`${broker!.url}/mq9/${subject}`, { method: "POST", body })).json() as Promise<Record<string, any>>;
/** The /stats document without its timestamp. */
const stats = async () => {
  const { generated_at: _, ...doc } = (await (await fetch(`${broker!.url}/stats`)).json()) as Record<string, unknown>;
  return doc;
};
/** Every Durable Object storage file below the state directory, relative to it. */
const storageFiles = () =>
  readdirSync(join(stateDir, "v3", "do"), { recursive: true, encoding: "utf8" }).filter((f) => f.endsWith(".sqlite")).sort();
const text = (m: Message) => new TextDecoder().decode(m.value);
/** Those of `files` (relative to v3/do) that hold a row, or have a -wal beside them (what the sweep at start keeps). */
async function filesHoldingData(files: string[]): Promise<string[]> {
  const out: string[] = [];
  for (const f of files) {
    const path = join(stateDir, "v3", "do", f);
    const bytes = readFileSync(path);
    const empty = await sqliteHoldsNothing(bytes.length, async (o, l) => bytes.subarray(o, o + l));
    if (!empty || existsSync(`${path}-wal`)) out.push(f);
  }
  return out;
}

/** Pulls from `group` until nothing more arrives; acks the messages `ack` picks. */
async function drain(client: MortarClient, group: string, ack: (m: Message) => boolean): Promise<Message[]> {
  const sub = await client.subscribe("orders", group, { pull: true });
  const got: Message[] = [];
  for (let idle = 0; idle < 2; ) {
    const batch = await sub.pull({ maxMsgs: 100, waitMs: 300 });
    idle = batch.length === 0 ? idle + 1 : 0;
    for (const m of batch) {
      got.push(m);
      if (ack(m)) await m.ack();
    }
  }
  await sub.close();
  return got;
}

describe("a state directory of the wrangler dev launcher, read by mortarmq dev", () => {
  it("keeps topics, group positions, producer dedupe state, mailboxes and mq9 group positions", async () => {
    broker = await startLocalBroker({ stateDir, port: 0, launcher: "wrangler" });
    expect(broker.launcher).toBe("wrangler");
    const old = await MortarClient.connect(broker.url);
    await old.declare("orders", 2);
    for (let i = 1; i <= 15; i++) {
      const r = await old.publish("orders", i <= 10 ? 0 : 1, `k${i}`, `order-${i}`, { producerId: 7n, producerSeq: BigInt(i) });
      expect(r.deduplicated).toBe(false);
    }
    // billing acks partition 0 up to sequence 4 and partition 1 up to 2; the rest returns to the group when it leaves
    const acked = (m: Message) => m.sequence <= (m.partition === 0 ? 4n : 2n);
    expect((await drain(old, "billing", acked)).length).toBe(15);
    await old.close();
    expect(await post("$mq9.AI.MAILBOX.CREATE", JSON.stringify({ name: "upgrade.box", ttl: 0 }))).toEqual({ error: "", mail_address: "upgrade.box" });
    for (const p of ["one", "two", "three"]) expect((await post("$mq9.AI.MSG.SEND.upgrade.box", p)).error).toBe("");
    const first = await post("$mq9.AI.MSG.FETCH.upgrade.box", JSON.stringify({ group_name: "workers", deliver: "earliest", config: { num_msgs: 1 } }));
    expect(first.messages.map((m: { msg_id: number }) => m.msg_id)).toEqual([0]);
    expect(await post("$mq9.AI.MSG.ACK.upgrade.box", JSON.stringify({ group_name: "workers", mail_address: "upgrade.box", msg_id: 0 }))).toEqual({ error: "" });
    const before = await stats();
    const filesBefore = storageFiles();
    expect(filesBefore.length).toBeGreaterThan(0);
    expect(filesBefore.every((f) => f.startsWith("mortarmq-edge-"))).toBe(true); // v3/do/<worker>-<Class>/<id>.sqlite
    await broker.stop();
    // files of objects that hold nothing (closed sessions) are removed at start (client/local/state-reaper.ts); the rest stay
    const holding = await filesHoldingData(filesBefore);
    expect(holding.length).toBeGreaterThan(0);

    broker = await startLocalBroker({ stateDir, port: 0 });
    expect(broker.launcher).toBe("miniflare");
    expect(await stats()).toEqual(before); // same topics, watermarks, sizes, producers, group floors and lag
    const now = await MortarClient.connect(broker.url);
    await now.declare("orders", 2);
    // the group resumes right after what it acked under the old launcher
    const rest = await drain(now, "billing", () => true);
    expect(rest.map((m) => `${m.partition}:${m.sequence}:${text(m)}`).sort()).toEqual([
      ...[5, 6, 7, 8, 9, 10].map((s) => `0:${s}:order-${s}`),
      ...[3, 4, 5].map((s) => `1:${s}:order-${s + 10}`),
    ].sort());
    // the producer's dedupe state survived: a retry of sequence 15 is answered as a duplicate, a new one appends after it
    const retry = await now.publish("orders", 1, "k15", "order-15", { producerId: 7n, producerSeq: 15n });
    expect({ deduplicated: retry.deduplicated, sequence: retry.sequence }).toEqual({ deduplicated: true, sequence: 5n });
    const next = await now.publish("orders", 1, "k16", "order-16", { producerId: 7n, producerSeq: 16n });
    expect({ deduplicated: next.deduplicated, sequence: next.sequence, durability: next.durability }).toEqual({ deduplicated: false, sequence: 6n, durability: 1 });
    await now.close();
    // mq9: every message kept; group `workers` gets only what it had not acknowledged
    const query = await post("$mq9.AI.MSG.QUERY.upgrade.box", "{}");
    expect(query.messages.map((m: { msg_id: number; payload: string }) => [m.msg_id, atob(m.payload)])).toEqual([[0, "one"], [1, "two"], [2, "three"]]);
    const after = await post("$mq9.AI.MSG.FETCH.upgrade.box", JSON.stringify({ group_name: "workers" }));
    expect(after.messages.map((m: { msg_id: number }) => m.msg_id)).toEqual([1, 2]);
    // the objects that held the data are the files wrangler dev wrote (new ones may be added, none replaced)
    expect(storageFiles()).toEqual(expect.arrayContaining(holding));
  });
});
