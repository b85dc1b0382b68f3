/**
 * The agent registry of one tenant on Durable Object SQLite storage:
 * cards, the FTS5 index, embedding vectors and the latest REPORT
 * (mq9 spec `$mq9.AI.AGENT.*`; behaviour in docs/agents.md).
 *
 * Tables:
 * - `agents`: one row per agent name: raw card JSON, mailbox key, version
 *   (bumped by every REGISTER), embedding text, latest REPORT + time.
 * - `agents_fts`: FTS5 (porter unicode61) over name, description, skills,
 *   rowid = agents.id; text pre-segmented by analyzer.ts.
 * - `agent_vectors`: one vector per agent with the embedder id and card
 *   version it was computed from; others are re-embedded before a search.
 *
 * Writes of one request commit in one `transactionSync`, after any
 * embedding request has finished, so a reply always follows its commit.
 */
import {
  MAX_AGENTS_PER_TENANT,
} from "../../wire/mq9/agent-limits";
import { echo } from "../../wire/mq9/errors";
import { mailboxKey, type AgentSelector, type DiscoverSpec, type RegisterSpec, type ReportSpec } from "../../wire/mq9/agent-requests";
import { ftsMatchQuery } from "./analyzer";
import { embeddingText, ftsColumns } from "./documents";
import { EmbedderError, type Embedder } from "./embed/types";
import { logFault } from "../shared/platform-faults";
import { agentFailure, discoveredCardJson } from "./results";
import type { AgentResult } from "./rpc";
import { decodeVector, dot, encodeVector, normalize, TopK } from "./vectors";

/** BM25 column weights of agents_fts: name, description, skills. */
export const BM25_WEIGHTS = [4, 2, 1] as const;

/** Stale vectors re-embedded per embedder call. */
const REEMBED_BATCH = 32;

const SCHEMA = `
CREATE TABLE IF NOT EXISTS agents (
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL UNIQUE,
  mailbox_key TEXT UNIQUE,
  card TEXT NOT NULL,
  version INTEGER NOT NULL,
  embed_text TEXT NOT NULL,
  registered_ms INTEGER NOT NULL,
  updated_ms INTEGER NOT NULL,
  report TEXT,
  report_ms INTEGER
);
CREATE VIRTUAL TABLE IF NOT EXISTS agents_fts USING fts5(name, description, skills, tokenize = 'porter unicode61 remove_diacritics 2');
CREATE TABLE IF NOT EXISTS agent_vectors (
  id INTEGER PRIMARY KEY,
  embedder TEXT NOT NULL,
  version INTEGER NOT NULL,
  vector BLOB NOT NULL
);
`;

type CardRow = { id: number; card: string; report: string | null; report_ms: number | null };

/** Registry operations over one object's storage, with the embedder in force. */
export class AgentIndex {
  private readonly sql: SqlStorage;
  private reembedding: Promise<void> | null = null;

  constructor(
    private readonly storage: DurableObjectStorage,
    private readonly embedder: Embedder,
  ) {
    this.sql = storage.sql;
    this.sql.exec(SCHEMA);
  }

  /**
   * REGISTER: inserts or replaces (same name) the card, its FTS row and its
   * vector. The card keeps its place in list-all order and its latest
   * REPORT. When the embedder fails the card is still registered (text
   * search and list-all work at once) and is embedded on the next semantic
   * DISCOVER. Fails with 409 when another agent already registered the
   * same mailbox, 429 at MAX_AGENTS_PER_TENANT, 403 (with
   * `registeredMailbox`) when `spec.replaceOnlyMailboxKey` is set and the
   * agent of that name is registered with another mailbox.
   */
  async register(spec: RegisterSpec, nowMs: number): Promise<AgentResult<{ created: boolean }>> {
    const text = embeddingText(spec.fields);
    let vector: Float32Array | null = null;
    try {
      [vector] = await this.embedder.embed([text]);
    } catch (e) {
      console.warn(`agent registry: embedding "${spec.fields.name}" with ${this.embedder.id} failed; retried at the next semantic DISCOVER: ${String(e)}`);
    }
    const { name, mailbox } = spec.fields;
    const key = mailbox === null ? null : mailboxKey(mailbox);
    return this.storage.transactionSync((): AgentResult<{ created: boolean }> => {
      const existing = this.sql.exec<{ id: number; mailbox_key: string | null }>("SELECT id, mailbox_key FROM agents WHERE name = ?", name).toArray()[0];
      if (existing && spec.replaceOnlyMailboxKey !== undefined && existing.mailbox_key !== spec.replaceOnlyMailboxKey) {
        const error = `permission denied: agent ${echo(name)} is registered with ${existing.mailbox_key === null ? "no mailbox" : `mailbox ${echo(existing.mailbox_key)}`}, which this token may not register`;
        return { ok: false, status: 403, error, registeredMailbox: existing.mailbox_key };
      }
      if (key !== null) {
        const owner = this.sql.exec<{ name: string }>("SELECT name FROM agents WHERE mailbox_key = ? AND name != ?", key, name).toArray()[0];
        if (owner) return agentFailure(409, `mailbox ${echo(mailbox!)} is already registered by agent ${echo(owner.name)}`);
      }
      if (!existing) {
        const { n } = this.sql.exec<{ n: number }>("SELECT count(*) AS n FROM agents").one();
        if (n >= MAX_AGENTS_PER_TENANT) return agentFailure(429, `agent registry is full: at most ${MAX_AGENTS_PER_TENANT} agents per tenant`);
      }
      const row = this.sql
        .exec<{ id: number; version: number }>(
          `INSERT INTO agents (name, mailbox_key, card, version, embed_text, registered_ms, updated_ms)
           VALUES (?, ?, ?, 1, ?, ?, ?)
           ON CONFLICT(name) DO UPDATE SET mailbox_key = excluded.mailbox_key, card = excluded.card,
             version = agents.version + 1, embed_text = excluded.embed_text, updated_ms = excluded.updated_ms
           RETURNING id, version`,
          name, key, spec.cardJson, text, nowMs, nowMs,
        )
        .one();
      const cols = ftsColumns(spec.fields);
      this.sql.exec("DELETE FROM agents_fts WHERE rowid = ?", row.id);
      this.sql.exec("INSERT INTO agents_fts (rowid, name, description, skills) VALUES (?, ?, ?, ?)", row.id, cols.name, cols.description, cols.skills);
      if (vector) this.putVector(row.id, row.version, vector);
      else this.sql.exec("DELETE FROM agent_vectors WHERE id = ?", row.id);
      return { ok: true, created: !existing };
    });
  }

  /** UNREGISTER: removes the agent, its index entries and report. Unknown agent = success with `removed: false`. */
  unregister(sel: AgentSelector): AgentResult<{ removed: boolean }> {
    return this.storage.transactionSync((): AgentResult<{ removed: boolean }> => {
      const found = this.resolve(sel);
      if (!found.ok) return found.status === 404 ? { ok: true, removed: false } : found;
      for (const table of ["agents", "agent_vectors"]) this.sql.exec(`DELETE FROM ${table} WHERE id = ?`, found.id);
      this.sql.exec("DELETE FROM agents_fts WHERE rowid = ?", found.id);
      return { ok: true, removed: true };
    });
  }

  /** REPORT: stores the body as the agent's latest status with the time. Unknown agent → 404. */
  report(spec: ReportSpec, nowMs: number): AgentResult {
    return this.storage.transactionSync((): AgentResult => {
      const found = this.resolve(spec.selector);
      if (!found.ok) return found;
      this.sql.exec("UPDATE agents SET report = ?, report_ms = ? WHERE id = ?", spec.bodyJson, nowMs, found.id);
      return { ok: true };
    });
  }

  /**
   * DISCOVER: one page of cards as JSON texts in the form of
   * `discoveredCardJson` (stored cards spliced verbatim; a row whose stored
   * text is not a JSON object is left out and logged).
   * - all: registration order (oldest first; re-REGISTER keeps the place).
   * - text: FTS5 BM25 (BM25_WEIGHTS), best first, ties by registration order.
   * - semantic: cosine similarity to the query's embedding, best first, ties
   *   by registration order; cards at or below the embedder's minScore are
   *   not matches. Fails with 503 when the embedder fails.
   */
  async discover(spec: DiscoverSpec): Promise<AgentResult<{ agents: string[] }>> {
    const offset = (spec.page - 1) * spec.limit;
    let rows: CardRow[];
    if (spec.mode === "all") {
      rows = this.sql.exec<CardRow>("SELECT id, card, report, report_ms FROM agents ORDER BY id LIMIT ? OFFSET ?", spec.limit, offset).toArray();
    } else if (spec.mode === "text") {
      const match = ftsMatchQuery(spec.query);
      rows =
        match === null
          ? []
          : this.sql
              .exec<CardRow>(
                `SELECT a.id, a.card, a.report, a.report_ms FROM agents_fts f JOIN agents a ON a.id = f.rowid
                 WHERE agents_fts MATCH ? ORDER BY bm25(agents_fts, ${BM25_WEIGHTS.join(", ")}), a.id LIMIT ? OFFSET ?`,
                match, spec.limit, offset,
              )
              .toArray();
    } else {
      try {
        rows = await this.semantic(spec);
      } catch (e) {
        // the embedder's own message names the configured service (useful to the user); anything else stays in the log
        const why = e instanceof EmbedderError ? e.message : `ref ${logFault("agent registry", e)}`;
        return agentFailure(503, `semantic search is unavailable: ${why}`);
      }
    }
    const agents: string[] = [];
    for (const r of rows) {
      const json = discoveredCardJson(r.card, r.report, r.report_ms);
      if (json !== null) agents.push(json);
      else console.error(`agent registry: stored card ${r.id} is not a JSON object; left out of DISCOVER`);
    }
    return { ok: true, agents };
  }

  /** Number of agents and of vectors missing for the embedder in force (for stats and tests). */
  counts(): { agents: number; staleVectors: number } {
    const agents = this.sql.exec<{ n: number }>("SELECT count(*) AS n FROM agents").one().n;
    const fresh = this.sql
      .exec<{ n: number }>("SELECT count(*) AS n FROM agents a JOIN agent_vectors v ON v.id = a.id AND v.version = a.version WHERE v.embedder = ?", this.embedder.id)
      .one().n;
    return { agents, staleVectors: agents - fresh };
  }

  private async semantic(spec: DiscoverSpec): Promise<CardRow[]> {
    const [raw] = await this.embedder.embed([spec.query]);
    const query = normalize(raw);
    await this.ensureEmbedded();
    const top = new TopK(spec.page, spec.limit);
    for (const r of this.sql.exec<{ id: number; vector: ArrayBuffer }>("SELECT id, vector FROM agent_vectors WHERE embedder = ?", this.embedder.id)) {
      const score = dot(query, decodeVector(r.vector));
      if (score > this.embedder.minScore) top.push(r.id, score);
    }
    const page = top.result();
    if (page.length === 0) return [];
    const byId = new Map(
      this.sql
        .exec<CardRow>(`SELECT id, card, report, report_ms FROM agents WHERE id IN (${page.map(() => "?").join(",")})`, ...page.map((p) => p.id))
        .toArray()
        .map((r) => [r.id, r]),
    );
    return page.flatMap((p) => byId.get(p.id) ?? []);
  }

  /** Embeds every card whose vector is missing, outdated or from another embedder (one job at a time). */
  private ensureEmbedded(): Promise<void> {
    this.reembedding ??= this.reembedStale().finally(() => {
      this.reembedding = null;
    });
    return this.reembedding;
  }

  private async reembedStale(): Promise<void> {
    for (let round = 0; round < 1 + Math.ceil(MAX_AGENTS_PER_TENANT / REEMBED_BATCH); round++) {
      const stale = this.sql
        .exec<{ id: number; version: number; embed_text: string }>(
          `SELECT a.id, a.version, a.embed_text FROM agents a
           LEFT JOIN agent_vectors v ON v.id = a.id AND v.version = a.version AND v.embedder = ?
           WHERE v.id IS NULL ORDER BY a.id LIMIT ?`,
          this.embedder.id, REEMBED_BATCH,
        )
        .toArray();
      if (stale.length === 0) return;
      const vectors = await this.embedder.embed(stale.map((s) => s.embed_text));
      this.storage.transactionSync(() => {
        stale.forEach((s, i) => {
          const current = this.sql.exec<{ version: number }>("SELECT version FROM agents WHERE id = ?", s.id).toArray()[0];
          if (current?.version === s.version) this.putVector(s.id, s.version, vectors[i]);
        });
      });
    }
  }

  private putVector(id: number, version: number, v: Float32Array): void {
    this.sql.exec(
      "INSERT OR REPLACE INTO agent_vectors (id, embedder, version, vector) VALUES (?, ?, ?, ?)",
      id, this.embedder.id, version, encodeVector(normalize(v)),
    );
  }

  /** The agent `sel` names: by name (its mailbox must match when both are given), else by mailbox. */
  private resolve(sel: AgentSelector): { ok: true; id: number } | { ok: false; status: number; error: string } {
    const row =
      sel.name !== null
        ? this.sql.exec<{ id: number; mailbox_key: string | null }>("SELECT id, mailbox_key FROM agents WHERE name = ?", sel.name).toArray()[0]
        : this.sql.exec<{ id: number; mailbox_key: string | null }>("SELECT id, mailbox_key FROM agents WHERE mailbox_key = ?", mailboxKey(sel.mailbox!)).toArray()[0];
    const who = sel.name !== null ? `agent ${echo(sel.name)}` : `agent with mailbox ${echo(sel.mailbox!)}`;
    if (!row) return agentFailure(404, `${who} is not registered`);
    if (sel.name !== null && sel.mailbox !== null && row.mailbox_key !== mailboxKey(sel.mailbox)) {
      return agentFailure(400, `agent ${echo(sel.name)} is not registered with mailbox ${echo(sel.mailbox)}`);
    }
    return { ok: true, id: row.id };
  }
}
