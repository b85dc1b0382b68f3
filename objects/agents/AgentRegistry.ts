/**
 * AgentRegistry Durable Object: the mq9 agent registry of one tenant
 * (`objectName("agents", tenant)`), implementing `$mq9.AI.AGENT.*`
 * (docs/agents.md). Requests arrive decoded and validated by the Worker
 * (objects/mq9/agents.ts); the object persists through AgentIndex and
 * replies after the commit.
 */
import { DurableObject } from "cloudflare:workers";
import type { Env } from "../env";
import { selectEmbedder } from "./embed/select";
import type { AgentCounts, AgentResult, AgentSelector, DiscoverSpec, RegisterSpec, ReportSpec } from "./rpc";
import { AgentIndex } from "./store";
import { AlarmScheduler } from "../shared/scheduler";

export class AgentRegistry extends DurableObject<Env> {
  private current: AgentIndex | null;
  private readonly embedder;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    const { embedder, warning } = selectEmbedder(env);
    if (warning) console.warn(`agent registry: ${warning}`);
    this.embedder = embedder;
    this.current = new AgentIndex(ctx.storage, embedder);
  }

  /** The index (its schema is created again on first use after a purge). */
  private get index(): AgentIndex {
    return (this.current ??= new AgentIndex(this.ctx.storage, this.embedder));
  }

  /**
   * Tenant purge: deletes every agent — cards, search index, vectors,
   * reports — with all of the object's storage and its alarm. The registry
   * is usable (empty) afterwards. Idempotent.
   */
  async purge(): Promise<void> {
    this.current = null;
    await new AlarmScheduler(this.ctx.storage, { owner: "AgentRegistry" }).stop(); // it sets none; one left by an older release goes
    await this.ctx.storage.deleteAll();
  }

  /** REGISTER (upsert by name). `created` is false for a re-REGISTER. */
  register(spec: RegisterSpec): Promise<AgentResult<{ created: boolean }>> {
    return this.index.register(spec, Date.now());
  }

  /** UNREGISTER by name or mailbox; an unknown agent is a success with `removed: false`. */
  unregister(sel: AgentSelector): AgentResult<{ removed: boolean }> {
    return this.index.unregister(sel);
  }

  /** REPORT: latest status body of a registered agent. */
  report(spec: ReportSpec): AgentResult {
    return this.index.report(spec, Date.now());
  }

  /** DISCOVER: one page of cards (text, semantic or all), each as its JSON text. */
  discover(spec: DiscoverSpec): Promise<AgentResult<{ agents: string[] }>> {
    return this.index.discover(spec);
  }

  /** Agent count and vectors still to (re-)embed for the embedder in force. */
  counts(): AgentCounts {
    return this.index.counts();
  }
}
