/**
 * `$mq9.AI.*` subject parser (mq9 spec, 协议总览, plus the push delivery
 * extension `$mq9.AI.PUSH.{CREATE,LIST,DELETE}.<mail_address>`, DESIGN §8),
 * shared by the HTTP and NATS transports. The mail_address is everything after the verb; for
 * DELETE the msg_id is the LAST dot-separated token
 * (`$mq9.AI.MSG.DELETE.task.001.7` → address `task.001`, msg_id 7).
 *
 * That grammar is ambiguous when the msg_id is forgotten:
 * `$mq9.AI.MSG.DELETE.task.1` is mailbox `task`, message 1 (kept, as the
 * spec's grammar implies). A last token that is not a canonical msg_id
 * (`task.001`: leading zeros; signs, letters) is refused with an error
 * naming the expected form, {@link DELETE_SUBJECT_FORM}.
 */
import { assertMailAddress } from "./address";
import { Mq9Error, echo } from "./errors";

/** The DELETE subject form quoted by DELETE subject errors. */
export const DELETE_SUBJECT_FORM = "$mq9.AI.MSG.DELETE.<mail_address>.<msg_id>";

/** Every mq9 subject starts with this. */
export const MQ9_SUBJECT_PREFIX = "$mq9.AI.";

/** Verbs of `$mq9.AI.MSG.<verb>.<mail_address>`. */
export type MsgVerb = "SEND" | "FETCH" | "ACK" | "QUERY";

/** Verbs of `$mq9.AI.PUSH.<verb>.<mail_address>` (push delivery extension, docs/push.md). */
export type PushVerb = "CREATE" | "LIST" | "DELETE";

/** Verbs of `$mq9.AI.A2A.RECEIVER.<verb>.<mail_address>` (A2A inbox, docs/a2a.md). */
export type A2aReceiverVerb = "CREATE" | "DELETE";

/** Verbs of `$mq9.AI.AGENT.<verb>`. */
export type AgentVerb = "REGISTER" | "UNREGISTER" | "REPORT" | "DISCOVER";

/** A parsed mq9 subject. */
export type Mq9Subject =
  | { kind: "MAILBOX.CREATE" }
  | { kind: `MSG.${MsgVerb}`; mailAddress: string }
  | { kind: "MSG.DELETE"; mailAddress: string; msgId: number }
  | { kind: `PUSH.${PushVerb}`; mailAddress: string }
  | { kind: `A2A.RECEIVER.${A2aReceiverVerb}`; mailAddress: string }
  | { kind: `AGENT.${AgentVerb}`; verb: AgentVerb };

/** The kind of a parsed subject, e.g. `"MSG.SEND"`. */
export type Mq9SubjectKind = Mq9Subject["kind"];

const MSG_VERBS: readonly MsgVerb[] = ["SEND", "FETCH", "ACK", "QUERY"];
const AGENT_VERBS: readonly AgentVerb[] = ["REGISTER", "UNREGISTER", "REPORT", "DISCOVER"];
const PUSH_VERBS: readonly PushVerb[] = ["CREATE", "LIST", "DELETE"];

/** True when `subject` is in the mq9 namespace (`$mq9.AI.` prefix), known or not. */
export function isMq9Subject(subject: string): boolean {
  return subject.startsWith(MQ9_SUBJECT_PREFIX);
}

/**
 * Parses `subject`. Throws Mq9Error:
 * - `unknown_subject` for anything that is not one of the spec's subjects;
 * - `bad_request` for a known verb with a missing/invalid mail_address or a
 *   DELETE msg_id that is not a canonical non-negative decimal integer.
 */
export function parseMq9Subject(subject: string): Mq9Subject {
  if (!isMq9Subject(subject)) throw unknown(subject);
  const rest = subject.slice(MQ9_SUBJECT_PREFIX.length);
  if (rest === "MAILBOX.CREATE") return { kind: "MAILBOX.CREATE" };
  if (rest.startsWith("AGENT.")) {
    const verb = rest.slice("AGENT.".length) as AgentVerb;
    if (AGENT_VERBS.includes(verb)) return { kind: `AGENT.${verb}`, verb };
    throw unknown(subject);
  }
  if (rest.startsWith("PUSH.")) {
    const { verb, tail } = verbAndTail(rest.slice("PUSH.".length));
    if (!PUSH_VERBS.includes(verb as PushVerb)) throw unknown(subject);
    return { kind: `PUSH.${verb as PushVerb}`, mailAddress: addressOf(tail, subject) };
  }
  if (rest.startsWith("A2A.RECEIVER.")) {
    const { verb, tail } = verbAndTail(rest.slice("A2A.RECEIVER.".length));
    if (verb !== "CREATE" && verb !== "DELETE") throw unknown(subject);
    return { kind: `A2A.RECEIVER.${verb}`, mailAddress: addressOf(tail, subject) };
  }
  if (!rest.startsWith("MSG.")) throw unknown(subject);
  const { verb, tail } = verbAndTail(rest.slice("MSG.".length));
  if (verb === "DELETE") {
    const last = tail.lastIndexOf(".");
    if (last < 0) throw new Mq9Error("bad_request", `subject ${echo(subject)}: expected ${DELETE_SUBJECT_FORM}`);
    const mailAddress = tail.slice(0, last);
    const idText = tail.slice(last + 1);
    assertMailAddress(mailAddress);
    return { kind: "MSG.DELETE", mailAddress, msgId: parseMsgIdToken(idText, subject) };
  }
  if (!MSG_VERBS.includes(verb as MsgVerb)) throw unknown(subject);
  return { kind: `MSG.${verb as MsgVerb}`, mailAddress: addressOf(tail, subject) };
}

/** `VERB.rest` → the verb and what follows its dot ("" when nothing does). */
function verbAndTail(s: string): { verb: string; tail: string } {
  const dot = s.indexOf(".");
  return dot < 0 ? { verb: s, tail: "" } : { verb: s.slice(0, dot), tail: s.slice(dot + 1) };
}

/** The mail_address after a verb; Mq9Error(bad_request) when missing or invalid. */
function addressOf(tail: string, subject: string): string {
  if (tail === "") throw new Mq9Error("bad_request", `subject ${echo(subject)}: missing mail_address`);
  assertMailAddress(tail);
  return tail;
}

/** The DELETE msg_id token: canonical decimal (no sign, no leading zeros), a safe integer. */
function parseMsgIdToken(text: string, subject: string): number {
  if (!/^(0|[1-9][0-9]*)$/.test(text) || !Number.isSafeInteger(Number(text))) {
    throw new Mq9Error(
      "bad_request",
      `subject ${echo(subject)}: the last token "${echo(text)}" is not a msg_id (a decimal integer without sign or leading zeros); ` +
        `expected ${DELETE_SUBJECT_FORM} — was the msg_id forgotten?`,
    );
  }
  return Number(text);
}

function unknown(subject: string): Mq9Error {
  return new Mq9Error("unknown_subject", `unknown mq9 subject "${echo(subject)}"`);
}
