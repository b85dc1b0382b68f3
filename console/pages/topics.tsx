/** Topics: a page of topics (GET /v0/topics, by name, prefix filter, cursor paging) and a create form. */
import { useState } from "preact/hooks";
import type { TopicPage } from "../../wire/admin/console";
import { can, get, request } from "../api";
import { bytes, count, plural, retention, topicsSummary } from "../format";
import { Pager, Status, Table, useAction, usePages, usePoll } from "../ui";
import { LOCATION_HINTS, LOCATION_HINT_REGIONS } from "../../wire/admin/location-hint";

export function Topics({ tenant }: { tenant: string }) {
  const pages = usePages(50);
  const { data, error, reload } = usePoll(() => get<TopicPage>(`/v0/topics?${pages.query}`), 5000, [tenant, pages.query]);
  const act = useAction();
  const [name, setName] = useState("");
  const [parts, setParts] = useState("1");
  const [hint, setHint] = useState("");
  return (
    <section aria-labelledby="topics-h">
      <h2 id="topics-h">Topics</h2>
      {can("mortar.admin", "any") && <form class="row" onSubmit={(e) => {
        e.preventDefault();
        void act.run(async () => {
          const r = await request<{ name: string; created: boolean; partition_count: number }>("POST", "/v0/topics", { name, partitions: Number(parts), ...(hint ? { location_hint: hint } : {}) });
          reload();
          return r.created ? `created topic ${r.name} (${plural(r.partition_count, "partition")}) and ${r.name}.dlq` : `topic ${r.name} already exists`;
        });
      }}>
        <label>New topic <input name="topic-name" value={name} required maxLength={255} onInput={(e) => setName(e.currentTarget.value)} /></label>
        <label>Partitions <input name="partitions" type="number" min={1} max={1024} value={parts} required onInput={(e) => setParts(e.currentTarget.value)} /></label>
        <label>Location hint <select name="location-hint" value={hint} onChange={(e) => setHint(e.currentTarget.value)}>
          <option value="">none (near the first request)</option>
          {LOCATION_HINTS.map((h) => <option value={h}>{h}: {LOCATION_HINT_REGIONS[h]}</option>)}
        </select></label>
        <button disabled={act.busy}>Create topic</button>
      </form>}
      <Status error={act.error}>{act.note}</Status>
      <form class="row" role="search" onSubmit={(e) => e.preventDefault()}>
        <label>Filter by prefix <input type="search" value={pages.prefix} onInput={(e) => pages.setPrefix(e.currentTarget.value)} /></label>
      </form>
      <Status error={error}>{data ? topicsSummary(data.total, data.tenant) : "Loading…"}</Status>
      {data && (
        <Table caption="Topics, by name" numeric={[1, 2, 3, 4, 5]}
          head={["Topic", "Partitions", "Records", "Size", "Groups", "Lag (msgs)", "Retention"]}
          rows={data.topics.map((t) => [
            <a href={`#/topics/${encodeURIComponent(t.name)}`}>{t.name}</a>,
            count(t.partition_count), count(t.records), bytes(t.size_bytes), count(t.groups), count(t.lag),
            retention(t.retention),
          ])} />
      )}
      <Pager label="Topic pages" prev={pages.prev} next={pages.next(data?.next ?? null)} />
    </section>
  );
}
