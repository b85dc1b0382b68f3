import { describe, expect, it } from "vitest";
import {
  MAX_ECHO_CHARS,
  Mq9Error,
  assertMailAddress,
  echo,
  mq9Messages,
  parseMq9Headers,
  parseMq9Subject,
} from "../../wire/mq9";

function errorOf(fn: () => unknown): Mq9Error {
  try {
    fn();
  } catch (e) {
    return e as Mq9Error;
  }
  throw new Error("did not throw");
}

const huge = "a".repeat(60_000);

describe("error strings echo at most MAX_ECHO_CHARS of client input", () => {
  it("echo keeps short input and cuts long input (never inside a surrogate pair)", () => {
    expect(echo("task.001")).toBe("task.001");
    expect(echo("x".repeat(MAX_ECHO_CHARS))).toBe("x".repeat(MAX_ECHO_CHARS));
    expect(echo(huge)).toBe(`${"a".repeat(MAX_ECHO_CHARS)}…`);
    const pair = "x".repeat(MAX_ECHO_CHARS - 1) + "😀" + "tail";
    expect(echo(pair)).toBe(`${"x".repeat(MAX_ECHO_CHARS - 1)}…`);
  });

  it("keeps the spec's exact strings for normal-length addresses", () => {
    const longest = "a".repeat(128);
    expect(mq9Messages.mailboxNotFound(longest)).toBe(`mailbox ${longest} does not exist`);
    expect(mq9Messages.mailboxExists("task.001")).toBe("mailbox task.001 already exists");
  });

  it("cuts a 60 KB address, subject, header name and header value", () => {
    const cases = [
      () => assertMailAddress(huge),
      () => parseMq9Subject(`$mq9.AI.MSG.SEND.${huge}`),
      () => parseMq9Subject(`$mq9.AI.MSG.PUSH.${huge}`),
      () => parseMq9Subject(`$mq9.AI.MSG.DELETE.task.${huge}`),
      () => parseMq9Headers([["mq9-priority", huge]]),
      () => parseMq9Headers([["mq9-ttl", huge]]),
      () => parseMq9Headers([["mq9-delay", "9".repeat(60_000)]]),
      () => parseMq9Headers([[`mq9-${huge}`, "1"]]),
    ];
    for (const fn of cases) {
      const e = errorOf(fn);
      expect(e).toBeInstanceOf(Mq9Error);
      expect(e.message.length, e.message.slice(0, 60)).toBeLessThan(4 * MAX_ECHO_CHARS);
      expect(e.message).toContain("…");
    }
    expect(errorOf(() => assertMailAddress(huge)).message).toBe(`invalid mail_address "${"a".repeat(128)}…": longer than 128 characters`);
  });
});
