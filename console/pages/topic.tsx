/**
 * One topic (GET /v0/topics/:topic, every 3 s): partitions, groups with
 * their lag per partition as a chart over the time this page is open,
 * members, in flight, dead-lettered; group actions (docs/groups.md), a test
 * publish, a peek at a partition's newest records, and delete.
 */
import { useRef, useState } from "preact/hooks";
import type { PeekAnswer, PublishAnswer, TopicDetail } from "../../wire/admin/console";
import type { GroupDoc } from "../../wire/admin/groups";
import { can, get, request, seg } from "../api";
import { Chart } from "../chart";
import { bytes, count, payloadText, plural, retention, time } from "../format";
import { LongText, Status, Table, useAction, usePoll } from "../ui";
import { LOCATION_HINT_REGIONS } from "../../wire/admin/location-hint";

/** Lag samples kept per chart (at 3 s: 15 minutes). */
const HISTORY = 300;

interface History { x: number[]; lag: Map<string, (number | null)[]> }

export function Topic({ tenant, name }: { tenant: string; name: string }) {
  const history = useRef<Map<string, History>>(new Map());
  const { data, error, reload } = usePoll(async () => {
    const d = await get<TopicDetail>(`/v0/topics/${seg(name)}`);
    record(history.current, d);
    return d;
  }, 3000, [tenant, name]);
  const act = useAction();
  if (!data) return <Status error={error}>Loading…</Status>;
  const base = `/v0/topics/${seg(name)}`;
  return (
    <section aria-labelledby="topic-h">
      <h2 id="topic-h">Topic {data.name}</h2>
      <p>Topic id {data.topic_id}{data.dlq ? " (dead-letter twin)" : ""}, {plural(data.partition_count, "partition")}, created {time(data.created_at)}.
        Retention: {retention(data.retention)}.{data.location_hint ? ` Location hint: ${data.location_hint} (${LOCATION_HINT_REGIONS[data.location_hint]}).` : ""}</p>
      <p>{plural(sum(data.partitions, (p) => p.records), "record")} ({bytes(sum(data.partitions, (p) => p.size_bytes))}) retained in all partitions.</p>
      <Status error={error ?? act.error}>{act.note}</Status>
      <Table caption="Partitions" numeric={[0, 1, 2, 3, 4, 5]}
        head={["Partition", "First sequence", "High watermark", "Records", "Size", "Producers"]}
        rows={data.partitions.map((p) => [p.partition, count(p.first_sequence), count(p.high_watermark), count(p.records), bytes(p.size_bytes), count(p.producers)])}
        foot={data.partitions.length > 1 ? ["Total", "", "", count(sum(data.partitions, (p) => p.records)), bytes(sum(data.partitions, (p) => p.size_bytes)), ""] : undefined} />

      <h3>Consumer groups</h3>
      {data.groups.length === 0 && <p>No consumer group has read this topic yet.</p>}
      {data.groups.map((g) => <Group key={g.group} g={g} base={base} history={history.current.get(g.group)} act={act} reload={reload} />)}

      {!data.dlq && can("mortar.publish", { name: data.name }) && <Publish base={base} partitions={data.partition_count} reload={reload} />}
      {can("mortar.consume", { name: data.name }) && <Peek base={base} partitions={data.partition_count} />}

      {!data.dlq && can("mortar.admin", { name: data.name }) && (
        <p><button class="danger" onClick={() => {
          if (!confirm(`Delete topic ${data.name} and ${data.name}.dlq with all their records?`)) return;
          void act.run(async () => {
            await request("DELETE", base);
            location.hash = "#/topics";
            return `deleted topic ${data.name}`;
          });
        }}>Delete topic {data.name}</button></p>
      )}
    </section>
  );
}

/** The sum of `f` over `xs`. */
function sum<T>(xs: readonly T[], f: (x: T) => number): number {
  return xs.reduce((a, x) => a + f(x), 0);
}

/** Appends the lag of every group and partition to the page's history. */
function record(h: Map<string, History>, d: TopicDetail): void {
  const t = d.generated_at / 1000;
  for (const g of d.groups) {
    let e = h.get(g.group);
    if (!e) h.set(g.group, (e = { x: [], lag: new Map() }));
    e.x.push(t);
    for (const p of g.partitions) {
      const key = `partition ${p.partition}`;
      const arr = e.lag.get(key) ?? Array<number | null>(e.x.length - 1).fill(null);
      arr.push(p.lag);
      e.lag.set(key, arr);
    }
    if (e.x.length > HISTORY) {
      e.x.shift();
      for (const a of e.lag.values()) a.shift();
    }
  }
}

function Group({ g, base, history, act, reload }: { g: GroupDoc; base: string; history?: History; act: ReturnType<typeof useAction>; reload: () => void }) {
  const [to, setTo] = useState("earliest");
  const path = `${base}/groups/${seg(g.group)}`;
  const id = `group-${g.group.replace(/[^A-Za-z0-9_-]/g, "_")}`;
  const doIt = (what: string, fn: () => Promise<unknown>) => act.run(async () => {
    await fn();
    reload();
    return `${what}: group ${g.group}`;
  });
  return (
    <article class="group" aria-labelledby={id}>
      <h4 id={id}>Group {g.group}</h4>
      <p>Lag {plural(g.lag, "message")}, {count(g.in_flight)} in flight, {count(g.dead_lettered)} dead-lettered, {plural(g.members.length, "member")}
        {g.paused_until ? `, paused until ${time(g.paused_until)}` : ""}; starts at {g.start_policy}.</p>
      {history && history.x.length > 0 && (
        <Chart title={`Lag of group ${g.group} per partition (messages)`} x={history.x} format={(v) => `${count(v)} msgs`}
          series={[...history.lag.entries()].map(([label, values]) => ({ label, values }))} />
      )}
      <Table caption={`Group ${g.group} by partition`} numeric={[0, 2, 3, 4, 5, 6]}
        head={["Partition", "Owner", "Committed floor", "Next sequence", "Lag", "In flight", "Dead-lettered"]}
        rows={g.partitions.map((p) => [p.partition, p.owner === null ? "none" : `member ${p.owner}`, count(p.committed_floor), count(p.next_sequence), count(p.lag), count(p.in_flight), count(p.dead_lettered)])} />
      {g.members.length > 0 && (
        <Table caption={`Members of group ${g.group}`} head={["Member", "Membership epoch", "Partitions"]}
          rows={g.members.map((m) => [m.member_id, m.membership_epoch, m.partitions.join(", ")])} />
      )}
      {can("mortar.admin", { name: g.topic, group: g.group }) && <div class="row">
        <label>Reset to <select value={to} onChange={(e) => setTo(e.currentTarget.value)}>
          <option value="earliest">earliest</option><option value="latest">latest</option>
        </select></label>
        <button disabled={act.busy} onClick={() => doIt(`reset to ${to}`, () => request("POST", `${path}/reset`, { to }))}>Reset group {g.group}</button>
        {g.paused_until
          ? <button disabled={act.busy} onClick={() => doIt("resumed", () => request("POST", `${path}/resume`))}>Resume group {g.group}</button>
          : <button disabled={act.busy} onClick={() => doIt("paused for 1 hour", () => request("POST", `${path}/pause`, { until: new Date(Date.now() + 3_600_000).toISOString() }))}>Pause group {g.group} for 1 hour</button>}
        <button class="danger" disabled={act.busy} onClick={() => {
          if (confirm(`Delete group ${g.group}${g.members.length ? ` and remove its ${g.members.length} members` : ""}?`)) void doIt("deleted", () => request("DELETE", `${path}?force=1`));
        }}>Delete group {g.group}</button>
      </div>}
    </article>
  );
}

function Publish({ base, partitions, reload }: { base: string; partitions: number; reload: () => void }) {
  const [p, setP] = useState("0");
  const [key, setKey] = useState("");
  const [value, setValue] = useState("");
  const act = useAction();
  return (
    <form class="box" aria-labelledby="publish-h" onSubmit={(e) => {
      e.preventDefault();
      void act.run(async () => {
        const r = await request<PublishAnswer>("POST", `${base}/partitions/${p}/records`, key ? { key, value } : { value });
        reload();
        return `published to partition ${r.partition} at sequence ${r.sequence}`;
      });
    }}>
      <h3 id="publish-h">Publish a test message</h3>
      <label>Partition <input type="number" min={0} max={partitions - 1} value={p} onInput={(e) => setP(e.currentTarget.value)} /></label>
      <label>Key (optional) <input value={key} maxLength={255} onInput={(e) => setKey(e.currentTarget.value)} /></label>
      <label>Value <textarea value={value} rows={2} onInput={(e) => setValue(e.currentTarget.value)} /></label>
      <button disabled={act.busy}>Publish</button>
      <Status error={act.error}>{act.note}</Status>
    </form>
  );
}

function Peek({ base, partitions }: { base: string; partitions: number }) {
  const [p, setP] = useState("0");
  const [n, setN] = useState("10");
  const [records, setRecords] = useState<PeekAnswer | null>(null);
  const act = useAction();
  return (
    <form class="box" aria-labelledby="peek-h" onSubmit={(e) => {
      e.preventDefault();
      void act.run(async () => {
        const r = await request<PeekAnswer>("GET", `${base}/partitions/${p}/records?last=${n}`);
        setRecords(r);
        return `${plural(r.records.length, "record")} of partition ${r.partition}`;
      });
    }}>
      <h3 id="peek-h">Peek at the newest records</h3>
      <label>Partition <input type="number" min={0} max={partitions - 1} value={p} onInput={(e) => setP(e.currentTarget.value)} /></label>
      <label>Last N <input type="number" min={1} max={100} value={n} onInput={(e) => setN(e.currentTarget.value)} /></label>
      <button disabled={act.busy}>Peek</button>
      <Status error={act.error}>{act.note}</Status>
      {records && (
        <Table caption={`Newest records of partition ${records.partition}`} numeric={[0]} long={[1, 2]} head={["Sequence", "Key", "Value", "Appended"]}
          rows={records.records.map((r) => [r.sequence, r.key ? <LongText text={payloadText(r.key)} label={`the key of record ${r.sequence}`} /> : "–",
            <LongText text={payloadText(r.value)} label={`record ${r.sequence}`} />, time(r.timestamp)])} />
      )}
    </form>
  );
}
