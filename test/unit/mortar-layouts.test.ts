/**
 * The MortarMQ v0 layouts are stated once, in the field tables of
 * wire/mortar/layouts.ts: the generated codec must be exactly what the
 * tables render, and the tables must name the spec's fields (§2).
 */
import { readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { renderCodecModule, wireName } from "../../wire/mortar/codegen";
import { FRAME_LAYOUTS, RESULT_LAYOUTS, type AnyLayout } from "../../wire/mortar/layouts";

const names = (l: AnyLayout) => [...l.fields, ...(l.tail?.fields ?? [])].map(([key]) => wireName(key));

describe("MortarMQ v0 field tables", () => {
  it("codec.gen.ts is exactly what the tables render (run `npm run gen:codec` after changing layouts.ts)", () => {
    const onDisk = readFileSync(resolve(dirname(fileURLToPath(import.meta.url)), "../../wire/mortar/codec.gen.ts"), "utf8");
    expect(onDisk).toBe(renderCodecModule());
  });

  it("frame fields are the spec's §2 payload fields, in its order (length prefixes implied by the kinds)", () => {
    const l = FRAME_LAYOUTS as Record<string, AnyLayout>;
    expect(names(l.PUB!)).toEqual(["topic_id", "partition", "producer_id", "producer_seq", "flags", "key", "value"]);
    expect(names(l.PULL!)).toEqual([
      "subscription_id", "member_id", "membership_epoch", "assignment_epoch", "ownership_epochs", "max_msgs", "max_bytes", "wait_ms", "min_bytes",
    ]);
    expect(names(l.DECLARE!)).toEqual(["topic", "partition_count", "flags", "fields", "retention_ms", "retention_bytes", "retention_messages", "discard"]);
    expect(Object.keys(FRAME_LAYOUTS)).toHaveLength(15);
  });

  it("OK result fields are the spec's §2 result fields", () => {
    const l = RESULT_LAYOUTS as Record<string, AnyLayout>;
    expect(names(l.PUB!)).toEqual(["sequence", "durability", "leader_epoch", "commit_seq", "result_flags"]);
    expect(names(l.CREDIT!)).toEqual(["granted_count", "granted_bytes", "outstanding_count", "outstanding_bytes", "credit_epoch"]);
  });
});
