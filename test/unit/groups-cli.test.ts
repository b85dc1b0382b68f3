/** Reset targets (wire/admin/groups.ts) and the `mortarmq groups` renderers (client/cli/groups-render.ts). */
import { describe, expect, it } from "vitest";
import { formatResetTarget, parseResetTarget, type GroupDoc } from "../../wire/admin/groups";
import { renderGroup, renderGroupList, renderReset } from "../../client/cli/groups-render";

describe("reset targets", () => {
  it("parse earliest, latest, sequence:N and time:ISO8601, and print back canonically", () => {
    expect(parseResetTarget("earliest")).toEqual({ kind: "earliest" });
    expect(parseResetTarget(" latest ")).toEqual({ kind: "latest" });
    expect(parseResetTarget("sequence:42")).toEqual({ kind: "sequence", sequence: 42 });
    expect(parseResetTarget("time:2026-05-02T10:00:00+02:00")).toEqual({ kind: "time", at: Date.parse("2026-05-02T08:00:00Z") });
    expect(formatResetTarget({ kind: "time", at: Date.parse("2026-05-02T08:00:00Z") })).toBe("time:2026-05-02T08:00:00.000Z");
    expect(formatResetTarget({ kind: "sequence", sequence: 7 })).toBe("sequence:7");
  });

  it("refuse anything else with a clear error", () => {
    expect(parseResetTarget("sequence:0")).toEqual({ error: "sequence must be a whole number ≥ 1" });
    expect(parseResetTarget("sequence:-3")).toMatchObject({ error: /must be earliest, latest/ });
    expect(parseResetTarget("time:2026-05-02")).toMatchObject({ error: /ISO 8601 date-time with a time zone/ });
    expect(parseResetTarget("time:2026-05-02T10:00:00")).toMatchObject({ error: /time zone/ });
    expect(parseResetTarget("offset:5")).toEqual({ error: 'must be earliest, latest, sequence:N or time:ISO8601, not "offset:5"' });
  });
});

describe("groups renderers", () => {
  const doc: GroupDoc = {
    tenant: "acme", topic: "orders", topic_id: 1, group: "billing", partition_count: 2, start_policy: "earliest",
    paused_until: "2026-05-02T10:00:00.000Z", members: [{ member_id: 3, membership_epoch: 4, assignment_epoch: 5, partitions: [0, 1] }],
    partitions: [
      { partition: 0, owner: 3, ownership_epoch: 2, revoking: true, committed_floor: 10, next_sequence: 12, high_watermark: 15, lag: 5, in_flight: 2,
        pending_redelivery: 0, pending_dead_letter: 0, dead_lettered: 1, delivered: 13, acked: 10, reset_pending: 4 },
      { partition: 1, owner: null, ownership_epoch: 1, revoking: false, committed_floor: 0, next_sequence: 1, high_watermark: 0, lag: 0, in_flight: 0,
        pending_redelivery: 0, pending_dead_letter: 0, dead_lettered: 0, delivered: 0, acked: 0, reset_pending: null },
    ],
    lag: 5, in_flight: 2, dead_lettered: 1,
  };

  it("describe shows the fields, members and one row per partition with its state", () => {
    const out = renderGroup(doc);
    expect(out).toContain("paused until:  2026-05-02T10:00:00.000Z\n");
    expect(out).toMatch(/MEMBER\s+MEMBERSHIP EPOCH\s+ASSIGNMENT EPOCH\s+PARTITIONS\n\s+3\s+4\s+5\s+0,1\n/);
    expect(out).toMatch(/\n\s+0\s+3\s+2\s+10\s+15\s+5\s+2\s+1\s+reset to 4 pending\n\s+1\s+-\s+1\s+0\s+0\s+0\s+0\s+0\s+unowned\n$/);
  });

  it("list and reset", () => {
    expect(renderGroupList({ tenant: "acme", topic: "orders", topic_id: 1, groups: [] })).toBe("no consumer groups on topic orders\n");
    expect(renderGroupList({ tenant: "acme", topic: "orders", topic_id: 1, groups: [{ group: "billing", members: 2, lag: 7, in_flight: 1, paused_until: null }] }))
      .toBe("GROUP    MEMBERS  LAG  IN FLIGHT  PAUSED UNTIL\nbilling        2    7          1  -\n");
    const r = renderReset({ tenant: "acme", topic: "orders", group: "billing", to: "latest", partitions: [
      { partition: 0, next_sequence: 16, committed_floor: 15, pending: true }, { partition: 1, next_sequence: 1, committed_floor: 0, pending: false },
    ] });
    expect(r).toMatch(/^reset group billing of topic orders to latest\n/);
    expect(r).toMatch(/\n\s+0\s+16\s+15\s+after the owner's REVOKE\n\s+1\s+1\s+0\s+yes\n\(a partition with a live owner moves once/);
  });
});
