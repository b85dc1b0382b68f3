/** Byte, duration and instant arguments with units (client/cli/parse.ts) and the quota flags that use them (client/cli/admin.ts). */
import { describe, expect, it } from "vitest";
import { parseBytes, parseDurationMs, parseInstantMs } from "../../client/cli/parse";
import { mergeQuotas, parseQuota } from "../../client/cli/admin";
import { UNLIMITED } from "../../wire/admin/tenants";

describe("byte arguments", () => {
  it("take binary units, case-insensitive, with or without B", () => {
    expect(parseBytes("--b", "512")).toBe(512);
    expect(parseBytes("--b", "64KiB")).toBe(65_536);
    expect(parseBytes("--b", "64k")).toBe(65_536);
    expect(parseBytes("--b", "10 MB")).toBe(10 * 1024 ** 2);
    expect(parseBytes("--b", "1GiB")).toBe(1024 ** 3);
    expect(parseBytes("--b", "2tib")).toBe(2 * 1024 ** 4);
    expect(parseBytes("--b", "1.5GiB")).toBe(1.5 * 1024 ** 3);
    expect(parseBytes("--b", "0")).toBe(0);
  });

  it("refuse what is not a byte count, naming the flag", () => {
    expect(() => parseBytes("--retention-bytes", "1 PB")).toThrow(/--retention-bytes must be a byte count/);
    expect(() => parseBytes("--b", "-1")).toThrow(/byte count/);
    expect(() => parseBytes("--b", "lots")).toThrow(/byte count/);
    expect(() => parseBytes("--b", "99999999TiB")).toThrow(/byte count/);
    expect(() => parseBytes("--b", "0", 1)).toThrow(/at least 1 bytes/);
  });
});

describe("duration arguments", () => {
  it("take ms, s, m, h, d, w; a bare number is in the given unit", () => {
    expect(parseDurationMs("--d", "500ms")).toBe(500);
    expect(parseDurationMs("--d", "90s")).toBe(90_000);
    expect(parseDurationMs("--d", "15m")).toBe(900_000);
    expect(parseDurationMs("--d", "1.5h")).toBe(5_400_000);
    expect(parseDurationMs("--d", "7d")).toBe(604_800_000);
    expect(parseDurationMs("--d", "2w")).toBe(1_209_600_000);
    expect(parseDurationMs("--d", "250")).toBe(250);
    expect(parseDurationMs("--d", "30", 0, "s")).toBe(30_000);
  });

  it("refuse unknown units, negatives and values below the minimum", () => {
    expect(() => parseDurationMs("--expires-in", "3y")).toThrow(/--expires-in must be a duration/);
    expect(() => parseDurationMs("--d", "-5s")).toThrow(/duration/);
    expect(() => parseDurationMs("--d", "0s", 1)).toThrow(/at least 1 ms/);
  });
});

describe("instant arguments", () => {
  it("are an ISO-8601 time or a duration from now", () => {
    const now = Date.parse("2026-03-01T00:00:00Z");
    expect(parseInstantMs("--until", "2026-03-02T12:00:00Z", now)).toBe(Date.parse("2026-03-02T12:00:00Z"));
    expect(parseInstantMs("--until", "2h", now)).toBe(now + 7_200_000);
    expect(parseInstantMs("--until", "30m", now)).toBe(now + 1_800_000);
    expect(() => parseInstantMs("--until", "30", now)).toThrow(/duration from now with a unit/);
    expect(() => parseInstantMs("--until", "2026-13-45T00:00:00Z", now)).toThrow(/ISO-8601/);
    expect(() => parseInstantMs("--until", "tomorrow", now)).toThrow(/ISO-8601/);
  });
});

describe("quota flags", () => {
  it("take byte units and 'unlimited', and keep the quota's own error text", () => {
    expect(parseQuota("--storage-bytes", "10GiB")).toBe(10 * 1024 ** 3);
    expect(parseQuota("--connections", "200")).toBe(200);
    expect(parseQuota("--mailboxes", "unlimited")).toBeNull();
    expect(() => parseQuota("--connections", "0")).toThrow(/--connections must be a whole number ≥ 1/);
    expect(() => parseQuota("--storage-bytes", "1.5GiB")).toThrow(/whole number ≥ 1/);
    expect(mergeQuotas({ ...UNLIMITED, connections: 5 }, { storageBytes: "1MiB" })).toEqual({ ...UNLIMITED, connections: 5, storage_bytes: 1024 ** 2 });
  });
});
