/**
 * The Worker's isolate meter (worker/telemetry.ts) never awaits a flush that
 * another request started (DESIGN.md §10: a continuation awaited across
 * requests is cancelled when the creating request ends): a second flush
 * sends the in-flight report itself, with the same number, and a late
 * answer to the first send never clears a newer report.
 */
import { describe, expect, it } from "vitest";
import { IsolateMeter, type SendReport } from "../../../worker/telemetry";
import type { UsageReport } from "../../../objects/usage/report";
import type { Env } from "../../../objects/env";

const env = {} as Env;

/** A sender whose first call waits until `release()`; every call is recorded. */
function gatedSender(): { send: SendReport; sent: number[]; release: () => void } {
  const sent: number[] = [];
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const send: SendReport = async (_env, _tenant, report: UsageReport) => {
    sent.push(report.no);
    if (sent.length === 1) await gate;
  };
  return { send, sent, release };
}

describe("IsolateMeter.flush", () => {
  it("does not wait for a flush in flight: it sends the same report again, then the next one", async () => {
    const g = gatedSender();
    const meter = new IsolateMeter(g.send);
    meter.add("acme", "mortarmq_mq9_requests_total", 1);
    let firstDone = false;
    const first = meter.flush(env).then(() => (firstDone = true));
    meter.add("acme", "mortarmq_mq9_requests_total", 2);
    await meter.flush(env); // settles while the first send is still held
    expect(firstDone).toBe(false);
    expect(g.sent).toEqual([1, 1, 2]);
    g.release();
    await first;
    // The first send's late answer did not clear anything newer: nothing is resent, the next report is 3.
    meter.add("acme", "mortarmq_mq9_requests_total", 1);
    await meter.flush(env);
    expect(g.sent).toEqual([1, 1, 2, 3]);
  });

  it("keeps an unacknowledged report and resends it with its number", async () => {
    const sent: number[] = [];
    let fail = true;
    const meter = new IsolateMeter(async (_e, _t, r) => {
      sent.push(r.no);
      if (fail) throw new Error("overloaded");
    });
    meter.add("acme", "x", 1);
    await meter.flush(env);
    fail = false;
    meter.add("acme", "x", 1);
    await meter.flush(env);
    expect(sent).toEqual([1, 1, 2]);
  });
});
