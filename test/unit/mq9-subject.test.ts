import { describe, expect, it } from "vitest";
import { isMq9Subject, Mq9Error, parseMq9Subject } from "../../wire/mq9";

function errorOf(subject: string): Mq9Error {
  try {
    parseMq9Subject(subject);
  } catch (e) {
    return e as Mq9Error;
  }
  throw new Error(`${subject} parsed`);
}

describe("parseMq9Subject", () => {
  it("parses every subject of the spec", () => {
    expect(parseMq9Subject("$mq9.AI.MAILBOX.CREATE")).toEqual({ kind: "MAILBOX.CREATE" });
    expect(parseMq9Subject("$mq9.AI.MSG.SEND.agent.translator.inbox")).toEqual({ kind: "MSG.SEND", mailAddress: "agent.translator.inbox" });
    expect(parseMq9Subject("$mq9.AI.MSG.FETCH.task.001.callback")).toEqual({ kind: "MSG.FETCH", mailAddress: "task.001.callback" });
    expect(parseMq9Subject("$mq9.AI.MSG.ACK.task.001.callback")).toEqual({ kind: "MSG.ACK", mailAddress: "task.001.callback" });
    expect(parseMq9Subject("$mq9.AI.MSG.QUERY.task.001.callback")).toEqual({ kind: "MSG.QUERY", mailAddress: "task.001.callback" });
    expect(parseMq9Subject("$mq9.AI.MSG.DELETE.task.001.callback.2")).toEqual({ kind: "MSG.DELETE", mailAddress: "task.001.callback", msgId: 2 });
    for (const verb of ["REGISTER", "UNREGISTER", "REPORT", "DISCOVER"] as const) {
      expect(parseMq9Subject(`$mq9.AI.AGENT.${verb}`)).toEqual({ kind: `AGENT.${verb}`, verb });
    }
  });
  it("takes DELETE's msg_id from the last token", () => {
    expect(parseMq9Subject("$mq9.AI.MSG.DELETE.a.7")).toEqual({ kind: "MSG.DELETE", mailAddress: "a", msgId: 7 });
    expect(parseMq9Subject("$mq9.AI.MSG.DELETE.task.001.0")).toEqual({ kind: "MSG.DELETE", mailAddress: "task.001", msgId: 0 });
    expect(errorOf("$mq9.AI.MSG.DELETE.task").code).toBe("bad_request");
    expect(errorOf("$mq9.AI.MSG.DELETE.task.x").message).toContain('last token "x" is not a msg_id');
    expect(errorOf("$mq9.AI.MSG.DELETE.task.007").code).toBe("bad_request");
    expect(errorOf("$mq9.AI.MSG.DELETE.task.-1").code).toBe("bad_request");
  });
  it("DELETE without its msg_id: a canonical last token is the msg_id, anything else names the expected form", () => {
    // The spec's grammar: `task.1` is mailbox task, message 1 (documented ambiguity, kept).
    expect(parseMq9Subject("$mq9.AI.MSG.DELETE.task.1")).toEqual({ kind: "MSG.DELETE", mailAddress: "task", msgId: 1 });
    for (const [subject, token] of [
      ["$mq9.AI.MSG.DELETE.task.001", "001"],
      ["$mq9.AI.MSG.DELETE.task.00", "00"],
      ["$mq9.AI.MSG.DELETE.task.+1", "+1"],
      ["$mq9.AI.MSG.DELETE.agent.inbox", "inbox"],
      ["$mq9.AI.MSG.DELETE.task.99999999999999999999", "99999999999999999999"],
    ]) {
      const e = errorOf(subject);
      expect(e.code, subject).toBe("bad_request");
      expect(e.message).toBe(
        `subject ${subject}: the last token "${token}" is not a msg_id (a decimal integer without sign or leading zeros); ` +
          "expected $mq9.AI.MSG.DELETE.<mail_address>.<msg_id> — was the msg_id forgotten?",
      );
    }
    expect(errorOf("$mq9.AI.MSG.DELETE.task").message).toBe("subject $mq9.AI.MSG.DELETE.task: expected $mq9.AI.MSG.DELETE.<mail_address>.<msg_id>");
  });

  it("rejects unknown subjects with unknown_subject", () => {
    for (const s of ["foo.bar", "$mq9.AI.MAILBOX.DROP", "$mq9.AI.MSG.PUSH.task.001", "$mq9.AI.AGENT.LIST", "$mq9.AI.", "$mq9.ai.MSG.SEND.a", "$mq9.AI.MAILBOX.CREATE.x"]) {
      const e = errorOf(s);
      expect(e.code, s).toBe("unknown_subject");
      expect(e.status).toBe(404);
      expect(e.message).toContain(s);
    }
  });
  it("rejects missing or invalid mail addresses with bad_request", () => {
    expect(errorOf("$mq9.AI.MSG.SEND").message).toContain("missing mail_address");
    expect(errorOf("$mq9.AI.MSG.SEND.").message).toContain("missing mail_address");
    expect(errorOf("$mq9.AI.MSG.SEND.Task.001").message).toContain('invalid mail_address "Task.001"');
    expect(errorOf("$mq9.AI.MSG.FETCH.task..001").code).toBe("bad_request");
    expect(errorOf("$mq9.AI.MSG.QUERY.task.001.").code).toBe("bad_request");
  });
  it("recognizes the namespace", () => {
    expect(isMq9Subject("$mq9.AI.MSG.SEND.a")).toBe(true);
    expect(isMq9Subject("_INBOX.abc")).toBe(false);
  });
});
