/**
 * Mailboxes: the tenant's mailboxes (GET /v0/mailboxes: by address, prefix,
 * cursor pages); one mailbox (GET /v0/mailboxes/:address): lanes, groups
 * and their floors, push subscriptions when the broker has them; its
 * messages by priority lane (mq9 QUERY); send one, delete one.
 */
import { useState } from "preact/hooks";
import type { MailboxDetail, MailboxPage } from "../../wire/admin/console";
import type { PushInfo } from "../../wire/mq9/push";
import { ApiError, can, get, mq9, seg } from "../api";
import { bytes, count, payloadText, plural, time } from "../format";
import { pushStatus } from "../push-status";
import { LongText, Pager, Status, Table, useAction, usePages, usePoll } from "../ui";

export function Mailboxes({ tenant }: { tenant: string }) {
  const pages = usePages(100);
  const { data, error } = usePoll(() => get<MailboxPage>(`/v0/mailboxes?${pages.query}`), 10_000, [tenant, pages.query]);
  return (
    <section aria-labelledby="mailboxes-h">
      <h2 id="mailboxes-h">Mailboxes</h2>
      <form class="row" role="search" onSubmit={(e) => e.preventDefault()}>
        <label>Filter by prefix <input type="search" value={pages.prefix} pattern="[a-z0-9.]*" onInput={(e) => pages.setPrefix(e.currentTarget.value)} /></label>
      </form>
      <Status error={error}>{data ? `page ${pages.page} of tenant ${data.tenant}'s mailboxes` : "Loading…"}</Status>
      {data && (
        <Table caption="Mailboxes, by address" head={["Mail address", "Created", "Expires"]}
          rows={data.mailboxes.map((m) => [<a href={`#/mailboxes/${m.mail_address}`}>{m.mail_address}</a>, time(m.created_at), time(m.expires_at)])} />
      )}
      <Pager label="Mailbox pages" prev={pages.prev} next={pages.next(data?.next ?? null)} />
    </section>
  );
}

interface Msg { msg_id: number; payload: string; priority: string; create_time: number; key: string | null; tags: string[]; reply_to?: string; correlation_id?: string }

export function Mailbox({ tenant, address }: { tenant: string; address: string }) {
  const detail = usePoll(() => get<MailboxDetail>(`/v0/mailboxes/${seg(address)}`), 5000, [tenant, address]);
  // what the token may not use is neither shown nor asked (each refusal would be counted)
  const box = { name: address };
  const msgs = usePoll(async () => (can("mq9.query", box) ? mq9<{ messages: Msg[] }>(`$mq9.AI.MSG.QUERY.${address}`, { limit: 200 }) : null), 5000, [tenant, address]);
  const push = usePoll(async () => {
    if (!can("mq9.push", box)) return null;
    try {
      return await mq9<{ pushes: PushInfo[] }>(`$mq9.AI.PUSH.LIST.${address}`, {});
    } catch (e) {
      if (e instanceof ApiError && e.status === 404) return null; // a broker without push delivery
      throw e;
    }
  }, 5000, [tenant, address]);
  const act = useAction();
  const [payload, setPayload] = useState("");
  const [priority, setPriority] = useState("normal");
  const reload = () => {
    detail.reload();
    msgs.reload();
  };
  const d = detail.data;
  if (!d) return <Status error={detail.error}>Loading…</Status>;
  const byLane = (lane: string) => (msgs.data?.messages ?? []).filter((m) => m.priority === lane);
  return (
    <section aria-labelledby="mailbox-h">
      <h2 id="mailbox-h">Mailbox {d.mail_address}</h2>
      <p>Created {time(d.created_at)}, expires {time(d.expires_at)}{d.ttl ? ` (TTL ${count(d.ttl)} s)` : ""}; next msg_id {d.next_msg_id}; {count(d.delayed)} delayed.</p>
      <Status error={act.error ?? msgs.error}>{act.note}</Status>
      {can("mq9.send", box) && <form class="box" aria-labelledby="send-h" onSubmit={(e) => {
        e.preventDefault();
        void act.run(async () => {
          const r = await mq9<{ msg_id: number }>(`$mq9.AI.MSG.SEND.${address}`, payload, { "mq9-priority": priority });
          setPayload("");
          reload();
          return `sent msg_id ${r.msg_id}`;
        });
      }}>
        <h3 id="send-h">Send a message</h3>
        <label>Payload <textarea value={payload} rows={2} onInput={(e) => setPayload(e.currentTarget.value)} /></label>
        <label>Priority <select value={priority} onChange={(e) => setPriority(e.currentTarget.value)}>
          <option>normal</option><option>urgent</option><option>critical</option>
        </select></label>
        <button disabled={act.busy}>Send</button>
      </form>}
      {(["critical", "urgent", "normal"] as const).map((lane) => (
        <Table caption={`${lane} lane: ${plural(d.lanes[lane].messages, "message")}, ${bytes(d.lanes[lane].bytes)}`} numeric={[0]} long={[1]}
          head={["msg_id", "Payload", "Key", "Tags", "Created", ""]}
          rows={byLane(lane).map((m) => [m.msg_id, <LongText text={payloadText(m.payload)} label={`message ${m.msg_id}`} />, m.key ?? "–", m.tags.join(", ") || "–",
            unixTime(m.create_time),
            !can("mq9.delete", box) ? "" : <button class="danger" aria-label={`Delete message ${m.msg_id}`} onClick={() => void act.run(async () => {
              await mq9(`$mq9.AI.MSG.DELETE.${address}.${m.msg_id}`, "");
              reload();
              return `deleted msg_id ${m.msg_id}`;
            })}>Delete</button>])} />
      ))}
      <Table caption={`Consumer groups (${count(d.groups_total)}): every msg_id below a floor is acknowledged`} numeric={[1, 2, 3]}
        head={["Group", "Critical floor", "Urgent floor", "Normal floor"]}
        rows={d.groups.map((g) => [g.group_name, g.floors.critical, g.floors.urgent, g.floors.normal])} />
      {push.data && (
        <Table caption={`Push subscriptions (${count(push.data.pushes.length)})`} numeric={[3, 4, 5]} long={[2, 7]}
          head={["push_id", "Group", "URL", "Concurrency", "Backlog", "In flight", "Delivered · failed · dead-lettered", "Status", "Last success", "Last failure"]}
          rows={push.data.pushes.map((p) => [p.push_id, p.group_name, <span class="long-text">{p.url}</span>, p.concurrency, count(p.backlog), count(p.in_flight),
            `${count(p.delivered)} · ${count(p.failed)} · ${count(p.dead_lettered)}`, <span class="long-text">{pushStatus(p)}</span>,
            cellTime(p.last_success_time), cellTime(p.last_failure_time)])} />
      )}
    </section>
  );
}

/** Unix seconds as the console's time; "never" for null. */
const unixTime = (s: number | null) => time(s === null ? null : new Date(s * 1000).toISOString());

/** As unixTime for a narrow column: at most two lines, the date and then the time with its zone (no break before "UTC"). */
const cellTime = (s: number | null) => (s === null ? "never" : <time dateTime={new Date(s * 1000).toISOString()}>{unixTime(s).replace(/ UTC$/, "\u00a0UTC")}</time>);
