/** CLI argument handling and rendering without a broker: global options, /stats, mq9 request bodies and tables. */
import { Command } from "commander";
import { afterEach, describe, expect, it } from "vitest";
import { DEFAULT_URL, addGlobalOptions, globals, type GlobalOptions } from "../../client/cli/context";
import { httpBase } from "../../client/cli/http";
import { buildProgram } from "../../client/cli/main";
import { discoverOptions, withFields } from "../../client/cli/mq9-agents";
import { mq9Hint } from "../../client/cli/mq9-http";
import { mq9Subjects as mq9Subject } from "@mortarmq/mq9";
import { renderAgents, renderMessages, reportedStatus } from "../../client/cli/mq9-render";
import { fetchOptions, queryOptions, sendOptions } from "../../client/cli/mq9";
import { fetchBody as clientFetchBody, queryBody as clientQueryBody, sendHeaders as clientSendHeaders } from "../../client/mq9/client";

/** Flags → client options → the request the client sends. */
const fetchBody = (o: Parameters<typeof fetchOptions>[0]) => clientFetchBody(fetchOptions(o));
const queryBody = (o: Parameters<typeof queryOptions>[0]) => clientQueryBody(queryOptions(o));
const sendHeaders = (o: Parameters<typeof sendOptions>[0]) => clientSendHeaders(sendOptions(o));
import { StatsSchema, TopicStatsSchema, renderTopicDescribe, renderTopicList, topicTotals } from "../../client/cli/stats";
import { formatSpan, renderRetention, retentionFromFlags } from "../../client/cli/retention";

/** Parses argv with a throwaway program that has the global options and one subcommand; returns what the subcommand saw. */
function parseGlobals(argv: string[]): GlobalOptions {
  let seen: GlobalOptions | undefined;
  const program = new Command().exitOverride();
  addGlobalOptions(program);
  program.command("probe").option("--other <x>").action((_o, cmd: Command) => { seen = globals(cmd); });
  program.parse(argv, { from: "user" });
  return seen!;
}

describe("global options", () => {
  afterEach(() => {
    delete process.env.MORTARMQ_URL;
    delete process.env.MORTARMQ_TOKEN;
  });

  it("defaults: local broker, no token, tables", () => {
    expect(parseGlobals(["probe"])).toEqual({ url: DEFAULT_URL, token: undefined, json: false });
  });

  it("are accepted before and after the subcommand", () => {
    expect(parseGlobals(["--url", "http://a:1", "probe", "--json", "--token", "t"])).toEqual({ url: "http://a:1", token: "t", json: true });
    expect(parseGlobals(["probe", "--other", "x", "--url", "http://b:2"]).url).toBe("http://b:2");
  });

  it("come from MORTARMQ_URL / MORTARMQ_TOKEN; flags win", () => {
    process.env.MORTARMQ_URL = "http://env:9";
    process.env.MORTARMQ_TOKEN = "envtoken";
    expect(parseGlobals(["probe"])).toEqual({ url: "http://env:9", token: "envtoken", json: false });
    expect(parseGlobals(["probe", "--url", "http://flag:1"]).url).toBe("http://flag:1");
  });

  it("the program has every command group", () => {
    const names = buildProgram().commands.map((c) => c.name());
    expect(names).toEqual(expect.arrayContaining(["dev", "bridge", "topics", "pub", "sub", "mq9"]));
    const mq9 = buildProgram().commands.find((c) => c.name() === "mq9")!;
    expect(mq9.commands.map((c) => c.name()).sort()).toEqual(
      ["ack", "create", "delete", "discover", "fetch", "list", "query", "register", "report", "request", "send", "unregister"]);
  });

  it("http commands need an http(s) URL; ws maps to http", () => {
    expect(httpBase("ws://127.0.0.1:8787/v0/mortar")).toBe("http://127.0.0.1:8787");
    expect(httpBase("https://broker.example")).toBe("https://broker.example");
    expect(() => httpBase("tcp://127.0.0.1:7070")).toThrow(/needs an http\(s\) broker URL/);
    expect(() => httpBase("not a url")).toThrow(/is not a URL/);
  });
});

const STATS = {
  tenant: "default",
  generated_at: 1767225600000,
  topics: [
    {
      name: "orders", topic_id: 1, dlq: false, partition_count: 2,
      retention: { retention_ms: 604_800_000, retention_bytes: 1024 ** 3, retention_messages: 0, discard: "old" },
      partitions: [
        { partition: 0, first_sequence: 1, high_watermark: 120, size_bytes: 4096, producers: 2,
          groups: [{ group: "billing", members: 2, committed_floor: 100, lag: 20, in_flight: 5, retention_skipped: 0 }] },
        { partition: 1, first_sequence: 41, high_watermark: 80, size_bytes: 2048, producers: 1,
          groups: [{ group: "billing", members: 2, committed_floor: 80, lag: 0, in_flight: 0, retention_skipped: 0 },
                   { group: "audit", members: 1, committed_floor: 40, lag: 40, in_flight: 1, retention_skipped: 30 }] },
      ],
    },
    { name: "orders.dlq", topic_id: 2, dlq: true, partition_count: 2, partitions: [] },
  ],
  mailboxes: 3,
  agents: 1,
};

describe("/stats", () => {
  it("parses the documented shape and rejects another one with the field named", () => {
    expect(StatsSchema.parse(STATS).topics[0]!.partitions[1]!.groups[1]!.lag).toBe(40);
    expect(StatsSchema.parse(STATS).topics[0]!.partitions[1]!.groups[1]!.retention_skipped).toBe(30); // kept, not stripped
    expect(StatsSchema.parse(STATS).topics[0]!.retention?.retention_bytes).toBe(1024 ** 3);
    const bad = StatsSchema.safeParse({ tenant: "t", topics: [{ name: "x", topic_id: 1, partition_count: 1, partitions: [{ partition: 0 }] }] });
    expect(bad.success).toBe(false);
    expect(bad.error!.issues[0]!.path.join(".")).toBe("topics.0.partitions.0.high_watermark");
  });

  it("sums a topic and renders the list", () => {
    const s = StatsSchema.parse(STATS);
    expect(topicTotals(s.topics[0]!)).toEqual({ appended: 200, sizeBytes: 6144, groups: ["audit", "billing"], lag: 60 });
    expect(renderTopicList(s)).toBe(
      "TOPIC       ID  PARTITIONS  APPENDED  SIZE     GROUPS  LAG\n" +
      "orders       1           2       200  6.0 KiB       2   60\n" +
      "orders.dlq   2           2         0  0 B           0    0\n",
    );
    expect(renderTopicList({ tenant: "t", topics: [] })).toBe("no topics (tenant t)\n");
  });

  it("describes a topic: partitions, then each group per partition with its lag", () => {
    const out = renderTopicDescribe(StatsSchema.parse(STATS).topics[0]!);
    expect(out).toContain("topic:       orders\n");
    expect(out).toContain("dead-letter: orders.dlq\n");
    expect(out).toContain("retention:   max age 7d, max size 1.0 GiB, max records unlimited per partition, discard old\n");
    expect(out).toContain(
      "PARTITION  FIRST SEQUENCE  HIGH WATERMARK  SIZE     PRODUCERS\n" +
      "        0               1             120  4.0 KiB          2\n" +
      "        1              41              80  2.0 KiB          1\n");
    expect(out).toContain(
      "GROUP    PARTITION  MEMBERS  COMMITTED FLOOR  LAG  IN FLIGHT  SKIPPED\n" +
      "audit            1        1               40   40          1       30\n" +
      "billing          0        2              100   20          5        0\n" +
      "billing          1        2               80    0          0        0\n");
  });

  it("describes a topic of a broker before retention: no retention line, '-' for what it does not report", () => {
    const old = { name: "t", topic_id: 1, partition_count: 1, partitions: [{ partition: 0, high_watermark: 5, size_bytes: 10, producers: 0,
      groups: [{ group: "g", members: 1, committed_floor: 5, lag: 0, in_flight: 0 }] }] };
    const out = renderTopicDescribe(TopicStatsSchema.parse(old));
    expect(out).not.toContain("retention");
    expect(out).toMatch(/^\s+0\s+-\s+5\s+10 B\s+0$/m);
    expect(out).toMatch(/^g\s+0\s+1\s+5\s+0\s+0\s+-$/m);
  });
});

describe("topic retention flags", () => {
  it("take units (durations, bytes), 0 or 'unlimited' for no limit, old|new; only the flags given", () => {
    expect(retentionFromFlags({})).toEqual({});
    expect(retentionFromFlags({ retentionMs: "7d", retentionBytes: "1GiB", retentionMessages: "1000000", discard: "new" }))
      .toEqual({ retentionMs: 604_800_000, retentionBytes: 1024 ** 3, retentionMessages: 1_000_000, discard: "new" });
    expect(retentionFromFlags({ retentionMs: "90000" })).toEqual({ retentionMs: 90_000 }); // a bare number is ms
    expect(retentionFromFlags({ retentionMs: "0", retentionBytes: "unlimited", retentionMessages: "none" }))
      .toEqual({ retentionMs: 0, retentionBytes: 0, retentionMessages: 0 });
    expect(() => retentionFromFlags({ retentionMs: "7 years" })).toThrow(/--retention-ms must be a duration/);
    expect(() => retentionFromFlags({ retentionBytes: "1PB" })).toThrow(/--retention-bytes must be a byte count/);
    expect(() => retentionFromFlags({ retentionMessages: "1k" })).toThrow(/--retention-messages must be a whole number/);
    expect(() => retentionFromFlags({ discard: "oldest" })).toThrow(/--discard must be one of old, new/);
  });

  it("show durations in the largest exact unit, and the settings on one line", () => {
    expect([604_800_000, 86_400_000 * 3, 5_400_000, 90_000, 1500, 0].map(formatSpan)).toEqual(["7d", "3d", "90m", "90s", "1500ms", "0ms"]);
    expect(renderRetention({ retentionMs: 0, retentionBytes: 0, retentionMessages: 10, discard: "new" }))
      .toBe("max age forever, max size unlimited, max records 10 per partition, discard new");
  });
});

describe("mq9 request bodies", () => {
  it("FETCH: flags map to the spec's fields; --from-time/--from-id imply deliver", () => {
    expect(fetchBody({})).toEqual({});
    expect(fetchBody({ group: "g", deliver: "earliest", forceDeliver: true, numMsgs: "50", maxWaitMs: "0" }))
      .toEqual({ group_name: "g", deliver: "earliest", force_deliver: true, config: { num_msgs: 50, max_wait_ms: 0 } });
    expect(fetchBody({ fromTime: "2026-01-01T00:00:00Z" })).toEqual({ deliver: "from_time", from_time: 1767225600 });
    expect(fetchBody({ fromId: "7", deliver: "from-id" })).toEqual({ deliver: "from_id", from_id: 7 });
    expect(() => fetchBody({ deliver: "newest" })).toThrow(/--deliver must be one of latest, earliest, from_time, from_id/);
    expect(() => fetchBody({ forceDeliver: true })).toThrow(/--force-deliver needs --group/);
    expect(() => fetchBody({ fromId: "1", fromTime: "2" })).toThrow(/not both/);
  });

  it("QUERY, SEND headers, DISCOVER, agent fields", () => {
    expect(queryBody({ key: "status", limit: "10", since: "1767225600", tags: "billing, vip" }))
      .toEqual({ key: "status", limit: 10, since: 1767225600, tags: ["billing", "vip"] });
    expect(sendHeaders({ key: "k", delay: "60", tags: "a, b", priority: "urgent" }))
      .toEqual({ "mq9-key": "k", "mq9-delay": "60", "mq9-tags": "a,b", "mq9-priority": "urgent" });
    expect(sendHeaders({ replyTo: "agent.a.inbox", correlationId: "req-1" })).toEqual({ "mq9-reply-to": "agent.a.inbox", "mq9-correlation-id": "req-1" });
    expect(() => sendHeaders({ priority: "high" })).toThrow(/normal/);
    expect(() => sendHeaders({ delay: "soon" })).toThrow('--delay must be a whole number, not "soon"');
    expect(() => sendHeaders({ ttl: "-1" })).toThrow("--ttl must be at least 0, not -1");
    expect(queryBody({ correlationId: "req-1" })).toEqual({ correlation_id: "req-1" });
    expect(discoverOptions({ text: "payment", limit: "10", page: "2" })).toEqual({ text: "payment", limit: 10, page: 2 });
    expect(withFields({ name: "a", x: 1 }, { name: "b", mailbox: undefined })).toEqual({ name: "b", x: 1 });
  });

  it("subjects and hints", () => {
    expect(mq9Subject.delete("task.001", 7)).toBe("$mq9.AI.MSG.DELETE.task.001.7");
    expect(mq9Subject.agent("DISCOVER")).toBe("$mq9.AI.AGENT.DISCOVER");
    expect(mq9Hint(404, "mailbox a.b does not exist")).toMatch(/mortarmq mq9 create/);
    expect(mq9Hint(404, "consumer group g has not fetched from mailbox a")).toMatch(/fetch with the same --group/);
    expect(mq9Hint(413, "payload of 2000000 bytes exceeds the limit of 1048576 bytes")).toMatch(/1 MiB/);
    expect(mq9Hint(503, "x")).toMatch(/retry/);
    expect(mq9Hint(403, "permission denied: mq9.fetch on a/g (no scope of the token allows it)")).toMatch(/scopes do not allow this.*mortarmq admin tokens scopes/);
  });
});

describe("mq9 tables", () => {
  it("messages: text payloads as text, binary as base64", () => {
    const out = renderMessages([
      { msg_id: 0, payload: Buffer.from("hello").toString("base64"), priority: "urgent", create_time: 1767225600, key: "status", tags: ["a", "b"] },
      { msg_id: 1, payload: "AAH/", priority: "normal", create_time: 1767225601, key: null, tags: [] },
    ]);
    expect(out).toBe(
      "MSG_ID  PRIORITY  CREATED               KEY     TAGS  PAYLOAD\n" +
      "     0  urgent    2026-01-01T00:00:00Z  status  a,b   hello\n" +
      "     1  normal    2026-01-01T00:00:01Z  -       -     base64:AAH/\n",
    );
    expect(renderMessages([])).toBe("no messages\n");
  });

  it("agents: name, mailbox, description, the reported status", () => {
    const cards = [
      { name: "translator", mailbox: "mq9://b/agent.t.inbox", description: "Translates", _mq9: { report: { status: "busy" }, report_time: 1 } },
      { name: "payer" },
    ];
    expect(reportedStatus(cards[0]!)).toBe("busy");
    expect(renderAgents(cards)).toBe(
      "NAME        MAILBOX                DESCRIPTION  STATUS\n" +
      "translator  mq9://b/agent.t.inbox  Translates   busy\n" +
      "payer       -                      -            -\n",
    );
    expect(renderAgents([])).toBe("no agents\n");
  });
});

describe("help text", () => {
  /** Every command of the program, depth first. */
  const all = (c: Command): Command[] => [c, ...c.commands.flatMap(all)];

  it("every command's help fits 80 columns (mq9's long terms too) and the top level names topics alter", () => {
    const program = buildProgram();
    for (const cmd of all(program)) {
      cmd.configureOutput({ getOutHelpWidth: () => 80 });
      const long = cmd.helpInformation().split("\n").filter((l) => l.length > 80);
      expect({ command: cmd.name(), long }).toEqual({ command: cmd.name(), long: [] });
    }
    expect(program.helpInformation()).toMatch(/topics\s+create, alter, delete, list and describe/);
  });

  it("mq9 fetch --num-msgs: the help and the error name the same range", () => {
    const fetchCmd = buildProgram().commands.find((c) => c.name() === "mq9")!.commands.find((c) => c.name() === "fetch")!;
    expect(fetchCmd.helpInformation().replace(/\s+/g, " ")).toContain("at most this many messages (1 to 1000; broker default 100)");
    expect(() => fetchOptions({ numMsgs: "1001" })).toThrow("--num-msgs must be between 1 and 1000, not 1001");
    expect(fetchBody({ numMsgs: "1000" })).toMatchObject({ config: { num_msgs: 1000 } });
  });

  it("an http-only command's hint mentions tcp:// only for a tcp:// URL (not for a typo like htp://)", () => {
    expect(() => httpBase("htp://127.0.0.1:8787")).toThrow(expect.objectContaining({ hint: "use --url http://host:port" }));
    expect(() => httpBase("tcp://127.0.0.1:7070")).toThrow(expect.objectContaining({ hint: expect.stringContaining("tcp:// works only for") }));
  });
});
