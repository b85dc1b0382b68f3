/**
 * mq9 agent registry quality and latency, through `POST /mq9/$mq9.AI.AGENT.*`
 * on the local broker (built-in embedder: local wrangler dev has no Workers
 * AI binding, so Workers AI recall is reported as not measured).
 *
 * 1. Recall@3 (and hit@1, MRR) of `semantic` DISCOVER for the labelled
 *    queries of test/fixtures/agent-queries.ts against the 20 fixture cards:
 *    the development set (the lexicon was checked against it) and the
 *    held-out set (never used for tuning), with `text` (FTS5) on the same
 *    queries as a baseline. Every quality row also gives precision as
 *    irrelevant cards returned per query (in the first page of 10: cards
 *    not in the query's `relevant` list).
 * 2. Identifier-like `text` and `semantic` queries
 *    (test/fixtures/agent-identifiers.ts) once their 12 cards are added.
 * 3. The same measures with synthetic distractor agents added (1,000 in all).
 * 4. DISCOVER latency (p50/p99, sequential requests) with 1,000 agents:
 *    text, semantic, list-all page 1 and a deep list-all page; REGISTER.
 *
 * `npm run bench -- agents --baseline <rev>` measures another revision in
 * the same run (bench/baseline.ts); the record then holds both.
 */
import type { BenchSuite } from "../runner";
import { summarize } from "../stats";
import { AGENT_CARDS } from "../../test/fixtures/agent-cards";
import { AGENT_QUERIES, AGENT_QUERIES_HELDOUT, type LabelledQuery } from "../../test/fixtures/agent-queries";
import { IDENTIFIER_CARDS, IDENTIFIER_QUERIES } from "../../test/fixtures/agent-identifiers";

const TOTAL_AGENTS = 1_000;
const LATENCY_SAMPLES = 150;

type Reply = { error: string; agents?: { name: string }[] };

/**
 * Recall@3, hit@1, MRR@10 and irrelevant cards per query (precision: cards
 * of the first page of 10 not in `relevant`) of `mode` over `queries`;
 * also the misses.
 */
async function quality(call: Call, mode: "semantic" | "text", queries: LabelledQuery[]) {
  let recall = 0;
  let hit1 = 0;
  let mrr = 0;
  let irrelevant = 0;
  const misses: { query: string; top3: string[] }[] = [];
  for (const q of queries) {
    const r = await call("DISCOVER", { [mode]: q.query, limit: 10 });
    if (r.error) throw new Error(`DISCOVER ${mode} ${JSON.stringify(q.query)}: ${r.error}`);
    const names = (r.agents ?? []).map((a) => a.name);
    irrelevant += names.filter((n) => !q.relevant.includes(n)).length;
    const top3 = names.slice(0, 3);
    recall += top3.filter((n) => q.relevant.includes(n)).length / Math.min(q.relevant.length, 3);
    if (q.relevant.includes(names[0])) hit1++;
    const rank = names.findIndex((n) => q.relevant.includes(n));
    if (rank >= 0) mrr += 1 / (rank + 1);
    if (!top3.some((n) => q.relevant.includes(n))) misses.push({ query: q.query, top3 });
  }
  const n = queries.length;
  const r3 = (x: number) => Math.round((x / n) * 1000) / 1000;
  return { queries: n, recallAt3: r3(recall), hitAt1: r3(hit1), mrrAt10: r3(mrr), irrelevantPerQuery: r3(irrelevant), misses };
}

type Call = (verb: string, body: unknown) => Promise<Reply>;

/** Deterministic synthetic agent cards (English and Chinese) drawn from domain phrases. */
function syntheticCards(count: number): { name: string; description: string; mailbox: string; skills: unknown[] }[] {
  const phrases = [
    "inventory forecasting for retail stores", "库存管理和补货建议", "social media post scheduling", "短视频脚本创作",
    "HR onboarding checklists", "员工考勤统计", "IoT sensor anomaly detection", "设备故障预测", "recipe suggestions from fridge contents",
    "健身计划定制", "language tutoring with spoken practice", "儿童英语陪练", "real estate listing descriptions", "房产估价",
    "insurance claim triage", "保险理赔进度查询", "car maintenance reminders", "停车位预约", "podcast show notes", "直播带货话术",
    "SEO keyword research", "网站性能监控", "sales lead scoring", "客户流失预警", "medical appointment reminders", "药品说明查询",
  ];
  let seed = 42;
  const rand = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32);
  const pick = () => phrases[Math.floor(rand() * phrases.length)];
  return Array.from({ length: count }, (_, i) => ({
    name: `synthetic-${i}`,
    description: `${pick()}; ${pick()}`,
    mailbox: `mq9://broker/agent.synthetic.${i}.inbox`,
    skills: [{ name: pick(), description: pick(), tags: [pick()] }],
  }));
}

export const suite: BenchSuite = {
  name: "agents",
  description: "agent registry: Recall@3 and precision (irrelevant cards per query) of semantic (built-in embedder) and text DISCOVER, latency with 1,000 agents",
  async run({ broker }) {
    const call: Call = async (verb, body) => {
      const res = await fetch(`${broker.url}/mq9/$mq9.AI.AGENT.${verb}`, { method: "POST", body: JSON.stringify(body) });
      return (await res.json()) as Reply;
    };
    const probe = await fetch(`${broker.url}/mq9/$mq9.AI.AGENT.DISCOVER`, { method: "POST", body: "{}" });
    if (probe.status === 404 || probe.status === 501) {
      console.log(`agents: skipped — POST /mq9/$mq9.AI.AGENT.DISCOVER answered ${probe.status} (mq9 route or agent registry not available)`);
      return { rows: [{ skipped: `POST /mq9 answered ${probe.status}` }] };
    }
    const existing = (await call("DISCOVER", { limit: 100 })).agents ?? [];
    if (existing.length > 0) throw new Error("agents bench needs an empty registry in tenant default");

    for (const card of AGENT_CARDS) {
      const r = await call("REGISTER", card);
      if (r.error) throw new Error(`REGISTER ${card.name}: ${r.error}`);
    }
    const q20 = {
      semanticDev: await quality(call, "semantic", AGENT_QUERIES),
      semanticHeldout: await quality(call, "semantic", AGENT_QUERIES_HELDOUT),
      textDev: await quality(call, "text", AGENT_QUERIES),
      textHeldout: await quality(call, "text", AGENT_QUERIES_HELDOUT),
    };
    for (const card of IDENTIFIER_CARDS) {
      const r = await call("REGISTER", card);
      if (r.error) throw new Error(`REGISTER ${card.name}: ${r.error}`);
    }
    const small = AGENT_CARDS.length + IDENTIFIER_CARDS.length;
    const qIdent = {
      text: await quality(call, "text", IDENTIFIER_QUERIES),
      semantic: await quality(call, "semantic", IDENTIFIER_QUERIES),
    };

    const registerMs: number[] = [];
    for (const card of syntheticCards(TOTAL_AGENTS - small)) {
      const t = performance.now();
      const r = await call("REGISTER", card);
      registerMs.push(performance.now() - t);
      if (r.error) throw new Error(`REGISTER ${card.name}: ${r.error}`);
    }
    const q1000 = {
      semanticDev: await quality(call, "semantic", AGENT_QUERIES),
      semanticHeldout: await quality(call, "semantic", AGENT_QUERIES_HELDOUT),
      textDev: await quality(call, "text", AGENT_QUERIES),
      textHeldout: await quality(call, "text", AGENT_QUERIES_HELDOUT),
      textIdentifiers: await quality(call, "text", IDENTIFIER_QUERIES),
    };

    const queries = [...AGENT_QUERIES, ...AGENT_QUERIES_HELDOUT].map((q) => q.query);
    const latency = async (body: (i: number) => unknown) => {
      const samples: number[] = [];
      for (let i = 0; i < LATENCY_SAMPLES; i++) {
        const t = performance.now();
        const r = await call("DISCOVER", body(i));
        samples.push(performance.now() - t);
        if (r.error) throw new Error(`DISCOVER: ${r.error}`);
      }
      return summarize(samples);
    };
    const lat = {
      text: await latency((i) => ({ text: queries[i % queries.length] })),
      semantic: await latency((i) => ({ semantic: queries[i % queries.length] })),
      listAllPage1: await latency(() => ({})),
      listAllPage40: await latency(() => ({ page: 40, limit: 20 })),
    };
    const reg = summarize(registerMs);

    // Leave the open tenant as we found it.
    for (let page = 0; ; page++) {
      const batch = (await call("DISCOVER", { limit: 100 })).agents ?? [];
      if (batch.length === 0 || page > 20) break;
      for (const a of batch) await call("UNREGISTER", { name: a.name });
    }

    const row = (set: string, agents: number, q: Awaited<ReturnType<typeof quality>>) => ({
      measure: `${set} (${q.queries} queries, ${agents} agents)`, "recall@3": q.recallAt3, "hit@1": q.hitAt1, "mrr@10": q.mrrAt10,
      "irrelevant/query": q.irrelevantPerQuery, p50_ms: "", p99_ms: "",
    });
    const latRow = (what: string, s: { p50: number; p99: number }) => ({
      measure: what, "recall@3": "", "hit@1": "", "mrr@10": "", "irrelevant/query": "", p50_ms: s.p50, p99_ms: s.p99,
    });
    return {
      rows: [
        row("semantic built-in, dev set", 20, q20.semanticDev),
        row("semantic built-in, held-out set", 20, q20.semanticHeldout),
        row("text FTS5, dev set", 20, q20.textDev),
        row("text FTS5, held-out set", 20, q20.textHeldout),
        row("text FTS5, identifier queries", small, qIdent.text),
        row("semantic built-in, identifier queries", small, qIdent.semantic),
        row("semantic built-in, dev set", TOTAL_AGENTS, q1000.semanticDev),
        row("semantic built-in, held-out set", TOTAL_AGENTS, q1000.semanticHeldout),
        row("text FTS5, dev set", TOTAL_AGENTS, q1000.textDev),
        row("text FTS5, held-out set", TOTAL_AGENTS, q1000.textHeldout),
        row("text FTS5, identifier queries", TOTAL_AGENTS, q1000.textIdentifiers),
        latRow(`DISCOVER text, ${TOTAL_AGENTS} agents`, lat.text),
        latRow(`DISCOVER semantic, ${TOTAL_AGENTS} agents`, lat.semantic),
        latRow(`DISCOVER list-all page 1, ${TOTAL_AGENTS} agents`, lat.listAllPage1),
        latRow(`DISCOVER list-all page 40, ${TOTAL_AGENTS} agents`, lat.listAllPage40),
        latRow(`REGISTER (growing to ${TOTAL_AGENTS})`, reg),
      ],
      detail: {
        embedder: "builtin (local wrangler dev; Workers AI not available offline, not measured)",
        latencySamplesPerMode: LATENCY_SAMPLES,
        quality20: q20,
        qualityIdentifiers: qIdent,
        quality1000: q1000,
        latencyMs: { ...lat, register: reg },
      },
    };
  },
};
