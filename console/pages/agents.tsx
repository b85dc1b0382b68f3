/** Agents: every registered agent with its latest REPORT (mq9 DISCOVER {}), and a DISCOVER box (text or semantic) with ranked results. */
import { useState } from "preact/hooks";
import { can, mq9 } from "../api";
import { plural, time } from "../format";
import { Status, Table, useAction, usePoll } from "../ui";

interface Card { name: string; description?: string; mailbox?: string; _mq9?: { report: unknown; report_time: number } }

const reportOf = (c: Card) => (c._mq9 ? `${JSON.stringify(c._mq9.report)} at ${time(new Date(c._mq9.report_time * 1000).toISOString())}` : "no report");

export function Agents({ tenant }: { tenant: string }) {
  // without agents.discover the page asks nothing (each refusal would be counted) and says why
  const allowed = can("agents.discover", "any");
  const all = usePoll(async () => (allowed ? mq9<{ agents: Card[] }>("$mq9.AI.AGENT.DISCOVER", { limit: 100 }) : null), 10_000, [tenant, allowed]);
  const [mode, setMode] = useState<"text" | "semantic">("text");
  const [query, setQuery] = useState("");
  const [results, setResults] = useState<Card[] | null>(null);
  const act = useAction();
  return (
    <section aria-labelledby="agents-h">
      <h2 id="agents-h">Agents</h2>
      {!allowed && <p>This token may not list or discover agents (it has no <code>agents.discover</code> scope).</p>}
      {allowed && <form class="box" role="search" aria-labelledby="discover-h" onSubmit={(e) => {
        e.preventDefault();
        void act.run(async () => {
          const r = await mq9<{ agents: Card[] }>("$mq9.AI.AGENT.DISCOVER", { [mode]: query, limit: 20 });
          setResults(r.agents);
          return `${plural(r.agents.length, "agent")} found`;
        });
      }}>
        <h3 id="discover-h">Discover</h3>
        <fieldset>
          <legend>Search</legend>
          <label><input type="radio" name="mode" checked={mode === "text"} onChange={() => setMode("text")} /> Text (keywords)</label>
          <label><input type="radio" name="mode" checked={mode === "semantic"} onChange={() => setMode("semantic")} /> Semantic (description)</label>
        </fieldset>
        <label>Query <input type="search" value={query} required maxLength={1000} onInput={(e) => setQuery(e.currentTarget.value)} /></label>
        <button disabled={act.busy}>Discover</button>
        <Status error={act.error}>{act.note}</Status>
        {results && (
          <ol class="results" aria-label="Ranked results">
            {results.map((c) => <li><strong>{c.name}</strong> — {c.description ?? ""} {c.mailbox ? `(${c.mailbox})` : ""}</li>)}
          </ol>
        )}
      </form>}
      <Status error={all.error} />
      {all.data && (
        <Table caption="Registered agents, oldest first" head={["Name", "Description", "Mailbox", "Latest report"]}
          rows={all.data.agents.map((c) => [c.name, c.description ?? "–", c.mailbox ?? "–", reportOf(c)])} />
      )}
    </section>
  );
}
