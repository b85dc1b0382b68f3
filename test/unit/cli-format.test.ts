/** CLI text output and option parsing (client/cli/format.ts, parse.ts, errors.ts). */
import { describe, expect, it } from "vitest";
import { ERROR_REGISTRY, ErrorCode, Op } from "../../wire/mortar";
import { MortarClientError } from "../../client/sdk";
import { CliError, describeError, formatErrorReport, unknownTopic, unreachable, usageError } from "../../client/cli/errors";
import {
  displayWidth, formatBytes, formatDuration, formatFields, formatTable, formatUnixSeconds, payloadCell, printableText, ratePerSecond, viewPayload,
} from "../../client/cli/format";
import { parseChoice, parseIntOption, parseJsonObject, parseList, parseTimeOption, parseU64Option, randomProducerId } from "../../client/cli/parse";

const b64 = (s: string | Uint8Array) => Buffer.from(s).toString("base64");

describe("formatTable", () => {
  it("aligns columns, right-aligns numeric ones, upper-cases headers, shows null as -", () => {
    const out = formatTable(["name", "count", "note"], [["alpha", 5, null], ["b", 1234, "x y"]]);
    expect(out).toBe(
      "NAME   COUNT  NOTE\n" +
      "alpha      5  -\n" +
      "b       1234  x y\n",
    );
  });

  it("shows control characters in cells as \\xNN escapes (a stored topic name cannot drive the terminal or forge rows)", () => {
    const name = "evil\u001b[31mRED\u001b]0;pwned\u0007\r\nfake\u0000\u009b";
    const out = formatTable(["topic", "id"], [[name, 5]]);
    expect(out.split("\n")[1]).toBe("evil\\x1b[31mRED\\x1b]0;pwned\\x07\\x0d\\x0afake\\x00\\x9b   5");
    expect(out).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/);
    expect(formatFields([["topic", name]])).toBe("topic: evil\\x1b[31mRED\\x1b]0;pwned\\x07\\x0d\\x0afake\\x00\\x9b\n");
  });

  it("counts wide (CJK) characters as two columns", () => {
    expect(displayWidth("付款")).toBe(4);
    const out = formatTable(["a", "b"], [["付款", "x"], ["ab", "y"]]);
    expect(out.split("\n")[1]).toBe("付款  x");
    expect(out.split("\n")[2]).toBe("ab    y");
  });

  it("prints only the header for no rows; fields align their keys", () => {
    expect(formatTable(["x"], [])).toBe("X\n");
    expect(formatFields([["topic", "orders"], ["partitions", 3]])).toBe("topic:      orders\npartitions: 3\n");
  });
});

describe("numbers and times", () => {
  it("formats bytes, durations, rates and unix seconds", () => {
    expect(formatBytes(0)).toBe("0 B");
    expect(formatBytes(1023)).toBe("1023 B");
    expect(formatBytes(1536)).toBe("1.5 KiB");
    expect(formatBytes(5 * 1024 * 1024)).toBe("5.0 MiB");
    expect(formatBytes(300 * 1024)).toBe("300 KiB");
    expect(formatDuration(45.4)).toBe("45 ms");
    expect(formatDuration(1234)).toBe("1.23 s");
    expect(ratePerSecond(1000, 500)).toBe(2000);
    expect(ratePerSecond(10, 0)).toBe(0);
    expect(formatUnixSeconds(1767225600)).toBe("2026-01-01T00:00:00Z");
  });
});

describe("payloads", () => {
  it("shows printable UTF-8 as text and anything else as base64", () => {
    expect(printableText(new TextEncoder().encode("héllo\tworld\n"))).toBe("héllo\tworld\n");
    expect(printableText(new Uint8Array([0x00, 0x01]))).toBeNull();
    expect(printableText(new Uint8Array([0xff, 0xfe]))).toBeNull(); // not UTF-8
    expect(printableText(new TextEncoder().encode("bell\u0007"))).toBeNull();
    expect(viewPayload(b64('{"a":1}'))).toEqual({ encoding: "utf8", text: '{"a":1}' });
    expect(viewPayload(b64(new Uint8Array([0, 1, 255])))).toEqual({ encoding: "base64", text: "AAH/" });
    expect(viewPayload("")).toEqual({ encoding: "utf8", text: "" });
  });

  it("table cells escape newlines, mark base64 and cut long payloads", () => {
    expect(payloadCell({ encoding: "utf8", text: "a\nb\tc\\" })).toBe("a\\nb\\tc\\\\");
    expect(payloadCell({ encoding: "base64", text: "AAH/" })).toBe("base64:AAH/");
    const cut = payloadCell({ encoding: "utf8", text: "x".repeat(100) }, 10);
    expect(cut).toBe("xxxxxxxxx…");
    expect([...cut].length).toBe(10);
  });
});

describe("option parsing", () => {
  it("parses bounded integers and rejects the rest with a USAGE error naming the flag", () => {
    expect(parseIntOption("--partitions", "3", 1, 10)).toBe(3);
    expect(() => parseIntOption("--partitions", "0", 1, 10)).toThrow(/--partitions must be between 1 and 10/);
    expect(() => parseIntOption("--limit", "0", 1, Number.MAX_SAFE_INTEGER)).toThrow("--limit must be at least 1, not 0"); // no bound but JavaScript's
    expect(() => parseIntOption("--partitions", "2.5", 1, 10)).toThrow(/whole number/);
    expect(() => parseIntOption("--partitions", "abc", 1, 10)).toThrow(CliError);
  });

  it("parses u64 producer ids in decimal and hex", () => {
    expect(parseU64Option("--producer-id", "0x42", 1n)).toBe(66n);
    expect(parseU64Option("--producer-id", "18446744073709551615", 1n)).toBe(18446744073709551615n);
    expect(() => parseU64Option("--producer-id", "18446744073709551616", 1n)).toThrow(/between/);
    expect(() => parseU64Option("--producer-id", "0", 1n)).toThrow(/between 1/);
    expect(() => parseU64Option("--producer-id", "-1", 1n)).toThrow(/decimal or 0x-hex/);
  });

  it("random producer ids are non-zero and differ", () => {
    const a = randomProducerId();
    const b = randomProducerId();
    expect(a).not.toBe(0n);
    expect(a).not.toBe(b);
    expect(a < 1n << 64n).toBe(true);
  });

  it("parses times as unix seconds or ISO-8601, lists, choices and JSON objects", () => {
    expect(parseTimeOption("--since", "1767225600")).toBe(1767225600);
    expect(parseTimeOption("--since", "2026-01-01T00:00:00Z")).toBe(1767225600);
    expect(parseTimeOption("--since", "2026-01-01T00:00:00.900Z")).toBe(1767225600);
    expect(() => parseTimeOption("--since", "yesterday")).toThrow(/unix seconds or an ISO-8601/);
    expect(() => parseTimeOption("--since", "2026-02-30")).toThrow(/unix seconds or an ISO-8601/);
    expect(parseTimeOption("--since", "2026-01-01")).toBe(1767225600);
    expect(parseList(" a, b,,c ")).toEqual(["a", "b", "c"]);
    expect(parseChoice("--priority", "urgent", ["normal", "urgent"])).toBe("urgent");
    expect(() => parseChoice("--priority", "high", ["normal", "urgent"])).toThrow(/one of normal, urgent/);
    expect(parseJsonObject("card", '{"name":"x"}')).toEqual({ name: "x" });
    expect(() => parseJsonObject("card", "[1]")).toThrow(/must be a JSON object/);
    expect(() => parseJsonObject("card", "{")).toThrow(/not valid JSON/);
  });
});

describe("error reports", () => {
  it("a broker error keeps its registry name, code and action, with a CLI hint", () => {
    const e = new MortarClientError(ErrorCode.UNKNOWN_TOPIC, 'topic "nope" does not exist', Op.PUB, "broker");
    const r = describeError(e, "http://x", { command: "pub" });
    expect(r).toMatchObject({ name: "UNKNOWN_TOPIC", code: 8, action: "refresh-metadata", status: null });
    expect(formatErrorReport(r)).toBe(
      'mortarmq: UNKNOWN_TOPIC (0x0008): topic "nope" does not exist\n' +
      "  what to do (refresh-metadata): check the name (mortarmq topics list shows this tenant's topics), or create it: mortarmq topics create <name> --partitions <n>\n",
    );
  });

  it("UNKNOWN_TOPIC is one report for every command; topics delete does not suggest creating the topic", () => {
    const text = (command: string) => formatErrorReport(describeError(unknownTopic("nope"), "u", { command }));
    const [pub, sub, describe] = ["pub", "sub", "topics describe"].map(text);
    expect(sub).toBe(pub);
    expect(describe).toBe(pub);
    expect(pub).toMatch(/^mortarmq: UNKNOWN_TOPIC \(0x0008\): topic "nope" does not exist\n {2}what to do \(refresh-metadata\): .*topics create/);
    const del = text("topics delete");
    expect(del).toBe('mortarmq: UNKNOWN_TOPIC (0x0008): topic "nope" does not exist\n' +
      "  what to do (refresh-metadata): nothing to delete: mortarmq topics list shows this tenant's topics\n");
  });

  it("a code without a CLI hint gets its registry action phrased for the command line, never the SDK's text", () => {
    const r = describeError(new MortarClientError(ErrorCode.BACKPRESSURE, "busy", Op.PUB, "broker"), "u");
    expect(r.action).toBe("retry-with-backoff");
    expect(r.hint).toBe("a transient condition: run the command again in a moment");
    for (const spec of ERROR_REGISTRY) {
      const hint = describeError(new MortarClientError(spec.code, "m", Op.PUB, "broker"), "u").hint;
      expect(hint, spec.name).not.toBe("");
      expect(hint, spec.name).not.toMatch(/DECLARE|NOTICE|CONTROL_ACK|member_id|epoch|SUB again|Resend/);
    }
  });

  it("PERMISSION_DENIED says what to ask for, not to check the broker's configuration", () => {
    const r = describeError(new MortarClientError(ErrorCode.PERMISSION_DENIED, "permission denied: mortar.admin on orders (no scope of the token allows it)", Op.DECLARE, "broker"), "u", { command: "sub" });
    expect(r.hint).toMatch(/^the token's scopes do not allow .*mortar\.publish, mortar\.consume or mortar\.admin .*mortarmq admin tokens scopes/);
    expect(r.hint).not.toMatch(/configuration and logs/);
  });

  it("a 403 of the group API names the scope as well as --tenant (a scoped token's reset is refused without --tenant)", async () => {
    const { GROUP_STATUS_HINTS } = await import("../../client/cli/groups-render");
    expect(GROUP_STATUS_HINTS[403]![1]).toMatch(/mortar\.admin on the group.*--tenant needs the operator token/);
  });

  it("admin usage prints fractional sums with at most 3 decimals", async () => {
    const { renderUsage } = await import("../../client/cli/admin");
    const h = { requests: 2, messages_in: 0, messages_out: 0, bytes_in: 0, bytes_out: 0, storage_bytes: 0, connection_seconds: 3.8339999999999996, rows_written: 1, rows_read: 1, do_requests: 32.300000000000004, worker_requests: 4 };
    const text = renderUsage({ tenant: "t", from: "a", to: "b", hours: [{ hour: "2026-12-05T14:00:00.000Z", ...h }], totals: h } as Parameters<typeof renderUsage>[0]);
    expect(text).toMatch(/ 3\.834 .* 32\.3 +4\n/);
    expect(text).not.toMatch(/3\.83399|32\.30000/);
  });

  it("a USAGE error without its own hint points to the help of the command it was met in", () => {
    expect(describeError(usageError("bad"), "u", { command: "topics create" }).hint).toBe("see `mortarmq topics create --help`");
    expect(describeError(usageError("bad"), "u").hint).toBe("see `mortarmq --help`");
    expect(describeError(usageError("bad", "use e.g. http://127.0.0.1:8787"), "u", { command: "pub" }).hint).toBe("use e.g. http://127.0.0.1:8787");
  });

  it("a failed CONNECT is one line: cannot reach the broker", () => {
    const r = describeError(MortarClientError.closed("connect ECONNREFUSED 127.0.0.1:9", Op.CONNECT), "http://127.0.0.1:9");
    expect(r.name).toBe("BROKER_UNREACHABLE");
    expect(formatErrorReport(r)).toBe("mortarmq: cannot reach the broker at http://127.0.0.1:9 (ECONNREFUSED); is `npm start` running?\n");
    expect(unreachable("u", "fetch failed").message).toBe("cannot reach the broker at u (fetch failed); is `npm start` running?");
  });

  it("HTTP failures show their status; anything else is ERROR with its message", () => {
    expect(formatErrorReport(describeError(new CliError("NOT_FOUND", "mailbox a does not exist", "create it", 404), "u")))
      .toBe("mortarmq: NOT_FOUND (HTTP 404): mailbox a does not exist\n  what to do: create it\n");
    expect(describeError(new Error("boom"), "u")).toMatchObject({ name: "ERROR", message: "boom" });
  });
});
