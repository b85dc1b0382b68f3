/** Shapes of mq9 replies shared by the mailbox object and every transport. */
import type { Priority } from "./priority";
import type { DeadLetterInfo } from "./push-types";

/** One message in a FETCH/QUERY reply. */
export interface Mq9Message {
  /** Per-mailbox id (0, 1, 2, …, strictly increasing in visibility order). */
  msg_id: number;
  /** Payload bytes, standard base64. */
  payload: string;
  priority: Priority;
  /** When the message became visible (send time, or due time of a delayed message), unix seconds. */
  create_time: number;
  /** `mq9-key`, or null. */
  key: string | null;
  /** `mq9-tags`, possibly empty. */
  tags: string[];
  /** `mq9-reply-to` (conversation extension); present only when the SEND carried it. */
  reply_to?: string;
  /** `mq9-correlation-id` (conversation extension); present only when the SEND carried it. */
  correlation_id?: string;
  /** Only on a dead-letter copy (a `<mail_address>.dlq` mailbox): where it came from and why it failed (docs/push.md). */
  dead_letter?: DeadLetterInfo;
}
