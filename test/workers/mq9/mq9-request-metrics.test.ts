import { describe, expect, it } from "vitest";
import { mq9RequestSeries } from "../../../objects/mq9/request-metrics";
import type { Mq9Reply } from "../../../objects/mq9/reply";

const ok: Mq9Reply = { status: 200, body: { error: "" } };
const notFound: Mq9Reply = { status: 404, code: "mailbox_not_found", body: { error: "mailbox x not found" } };

describe("mq9RequestSeries", () => {
  it("labels verb, outcome and transport; the same subject with another outcome or transport is another series", () => {
    const subject = "$mq9.AI.MSG.SEND.task.001";
    expect(mq9RequestSeries(subject, ok, "nats")).toBe('mortarmq_mq9_requests_total{verb="msg_send",outcome="ok",transport="nats"}');
    expect(mq9RequestSeries(subject, ok, "nats")).toBe('mortarmq_mq9_requests_total{verb="msg_send",outcome="ok",transport="nats"}'); // cached
    expect(mq9RequestSeries(subject, notFound, "nats")).toBe('mortarmq_mq9_requests_total{verb="msg_send",outcome="mailbox_not_found",transport="nats"}');
    expect(mq9RequestSeries(subject, ok, "http")).toBe('mortarmq_mq9_requests_total{verb="msg_send",outcome="ok",transport="http"}');
    expect(mq9RequestSeries("$mq9.AI.MAILBOX.CREATE", { status: 500, body: { error: "x" } }, "mcp"))
      .toBe('mortarmq_mq9_requests_total{verb="mailbox_create",outcome="internal",transport="mcp"}');
  });

  it("a subject that is not an mq9 subject is verb unknown, also after many distinct subjects filled the cache", () => {
    for (let i = 0; i < 5000; i++) expect(mq9RequestSeries(`$mq9.AI.MSG.SEND.box${i}`, ok, "http")).toContain('verb="msg_send"');
    expect(mq9RequestSeries("foo.bar", { status: 404, code: "bad_request", body: { error: "x" } }, "nats"))
      .toBe('mortarmq_mq9_requests_total{verb="unknown",outcome="bad_request",transport="nats"}');
  });
});
