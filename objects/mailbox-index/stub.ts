import type { Env } from "../env";
import { objectName } from "../shared/names";
import type { MailboxIndex } from "./MailboxIndex";

/** The MailboxIndex of `tenant` (object name `mailbox-index/<tenant>`). */
export function mailboxIndexStub(env: Env, tenant: string): DurableObjectStub<MailboxIndex> {
  return env.MAILBOX_INDEX.get(env.MAILBOX_INDEX.idFromName(objectName("mailbox-index", tenant)));
}
