import type { Env } from "../env";
import { tenantObject } from "../shared/jurisdiction";
import { objectName } from "../shared/names";
import type { MailboxIndex } from "./MailboxIndex";

/** The MailboxIndex of `tenant` (object name `mailbox-index/<tenant>`). */
export function mailboxIndexStub(env: Env, tenant: string): DurableObjectStub<MailboxIndex> {
  return tenantObject(env, env.MAILBOX_INDEX, tenant, objectName("mailbox-index", tenant));
}
