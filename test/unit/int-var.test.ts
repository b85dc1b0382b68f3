/**
 * The one parser of integer Worker vars (objects/shared/int-var.ts) and the
 * settings built on it: every var of the table goes through the same rules.
 */
import { describe, expect, it } from "vitest";
import { intVar, nonNegativeInt, positiveInt } from "../../objects/shared/int-var";
import { purgeDelayMs, revalidateMs } from "../../objects/tenants/config";
import { retentionDefaults } from "../../objects/shared/retention-config";
import { readConfig } from "../../objects/shared/read-config";
import { maxPartitionsPerTopic, partitionsPerTenant } from "../../objects/registry/config";
import { DEFAULT_RETENTION_MS } from "../../wire/mortar";

const D = 7;

describe("integer vars", () => {
  // [value, as non-negative, as positive] with default D and no cap
  const table: [string | undefined, number, number][] = [
    [undefined, D, D],
    ["", D, D],
    ["   ", D, D],
    ["0", 0, D],
    ["1", 1, 1],
    [" 42 ", 42, 42],
    ["1e3", 1000, 1000],
    ["1.5", D, D],
    ["-1", D, D],
    ["-0", 0, D],
    ["abc", D, D],
    ["10ms", D, D],
    ["Infinity", D, D],
    ["NaN", D, D],
    ["9007199254740991", 9007199254740991, 9007199254740991],
    ["1e20", Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER],
  ];
  it.each(table)("%j → non-negative %d, positive %d", (v, nonNeg, pos) => {
    expect(nonNegativeInt(v, D)).toBe(nonNeg);
    expect(positiveInt(v, D)).toBe(pos);
  });

  it("a value above the cap is the cap, not the default", () => {
    expect(intVar("70000", D, 1, 0xffff)).toBe(0xffff);
    expect(intVar("65535", D, 1, 0xffff)).toBe(65535);
    expect(intVar("0", D, 1, 0xffff)).toBe(D);
  });

  it("every setting parses its var the same way", () => {
    // fractional: the default everywhere (TENANT_PURGE_DELAY_MS used to take 1.5 ms)
    expect(purgeDelayMs({ TENANT_PURGE_DELAY_MS: "1.5" })).toBe(5 * 30_000 + 10_000);
    expect(purgeDelayMs({ TENANT_PURGE_DELAY_MS: "0" })).toBe(0);
    expect(purgeDelayMs({ TENANT_PURGE_DELAY_MS: " 250 ", TENANT_REVALIDATE_MS: "1000" })).toBe(250);
    expect(purgeDelayMs({ TENANT_REVALIDATE_MS: "1000" })).toBe(15_000);
    expect(revalidateMs({ TENANT_REVALIDATE_MS: "0" })).toBe(30_000);
    expect(retentionDefaults({ MORTAR_RETENTION_MS: "1.5", MORTAR_RETENTION_BYTES: "0" })).toMatchObject({ ms: DEFAULT_RETENTION_MS, bytes: 0 });
    expect(readConfig({ MORTAR_MAX_DELIVERY_ATTEMPTS: "100000", MORTAR_ACK_WAIT_MS: "2.5" })).toMatchObject({ maxAttempts: 0xffff, ackWaitMs: 30_000 });
    expect(maxPartitionsPerTopic({ MORTAR_MAX_PARTITIONS_PER_TOPIC: "70000" })).toBe(0xffff);
    expect(maxPartitionsPerTopic({ MORTAR_MAX_PARTITIONS_PER_TOPIC: "x" })).toBe(1024);
    expect([partitionsPerTenant({}, null), partitionsPerTenant({ MORTAR_PARTITIONS_PER_TENANT: "0" }, null), partitionsPerTenant({ MORTAR_PARTITIONS_PER_TENANT: "500" }, null), partitionsPerTenant({ MORTAR_PARTITIONS_PER_TENANT: "500" }, 7)])
      .toEqual([10_000, 10_000, 500, 7]); // a tenant's quota wins over the var
  });
});
