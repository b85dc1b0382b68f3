import type { Env } from "../env";
import { tenantObject } from "../shared/jurisdiction";
import { mailboxName } from "../shared/names";
import type { Mailbox } from "./Mailbox";

/** The Mailbox object of `address` in `tenant` (object name `mailbox/<tenant>/<address>`). */
export function mailboxStub(env: Env, tenant: string, address: string): DurableObjectStub<Mailbox> {
  return tenantObject(env, env.MAILBOX, tenant, mailboxName(tenant, address));
}
