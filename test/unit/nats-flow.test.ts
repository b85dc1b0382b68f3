/** NATS output flow control (wire/nats/flow.ts, docs/nats.md "Slow consumers"). */
import { describe, expect, it } from "vitest";
import { OutputFlow } from "../../wire/nats/flow";

describe("OutputFlow", () => {
  it("asks for a PING after pingAfter bytes, one at a time; its PONG confirms everything before it", () => {
    const f = new OutputFlow(1000, 100);
    expect(f.queued(60)).toBe("send");
    expect(f.queued(60)).toBe("send+ping"); // 120 ≥ 100: PING (6 bytes) follows
    expect([f.pending, f.awaiting]).toEqual([126, true]);
    expect(f.queued(200)).toBe("send"); // one PING out at a time
    expect(f.pong()).toBe(true);
    expect([f.pending, f.awaiting]).toEqual([200, false]); // the 200 sent after the PING are not confirmed
    expect(f.pong()).toBe(false); // a PONG for no PING of ours confirms nothing
    expect(f.queued(1)).toBe("send+ping");
  });

  it("a client that does not answer: output past maxPending while a PING is out is a slow consumer; a burst with none out goes", () => {
    const f = new OutputFlow(1000, 100);
    expect(f.queued(5000)).toBe("send+ping"); // everything before was read: the burst goes, then a PING
    expect(f.queued(1)).toBe("slow");
    expect(f.pending).toBe(5006); // nothing counted for what was refused
    f.pong();
    expect(f.queued(900)).toBe("send+ping");
    expect(f.queued(94)).toBe("send"); // 906 + 94 = 1000: at the bound, not past it
    expect(f.queued(1)).toBe("slow");
  });
});
