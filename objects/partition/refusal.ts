/**
 * The text of a record the partition refused (`AppendStatus.REJECTED` with
 * its code in `AppendResult.codes`), for the MortarMQ ERR frame of that PUB
 * and the console's test publish (docs/protocol.md "Topic retention").
 */
import { PRODUCER_DEDUPE_WINDOW } from "../../wire/mortar/constants";
import { ErrorCode } from "../../wire/mortar/errors";

/** Why the partition refused a record with `code` (≤ 512 bytes, the ERR message bound). */
export function refusalText(code: number): string {
  switch (code) {
    case ErrorCode.PRODUCER_SEQ_OUT_OF_WINDOW:
      return `producer_seq is at or below highest − ${PRODUCER_DEDUPE_WINDOW} for this producer (older than the dedupe window): it cannot be told apart from a new message; nothing was appended`;
    case ErrorCode.PARTITION_FULL:
      return "the partition is at its topic's retention limit (retention_bytes or retention_messages) and the topic refuses new messages (discard new); nothing was appended: raise the limit or alter discard to old";
    default:
      return "PUB rejected by the partition";
  }
}
