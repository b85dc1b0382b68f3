/**
 * Which WebSocket messages of a MortarMQ connection only keep it alive
 * (pure): HEARTBEAT ACTIVE frames from the client and the OK frames
 * answering them. MortarSession treats them as `quiet` (objects/session-base/
 * SocketSession.ts): not counted in telemetry, and a connection that sends
 * nothing else is idle for the token re-check (issue #26 §2 (f); NATS PINGs
 * are not counted either).
 */
import { HeartbeatState, Op } from "../../wire/mortar/constants";

/** Bytes of one HEARTBEAT frame: u32 length, op, subscription_id u16, member_id u64, membership_epoch u32, assignment_epoch u32, state u8. */
const HEARTBEAT_FRAME_BYTES = 4 + 1 + 2 + 8 + 4 + 4 + 1;
/** Bytes of one OK frame answering a HEARTBEAT: u32 length, op OK, request_op, result_len u32 (= 0). */
const HEARTBEAT_OK_BYTES = 4 + 1 + 1 + 4;

/** Reads the u32 length field of the frame at `o`. */
function lengthAt(b: Uint8Array, o: number): number {
  return ((b[o]! << 24) >>> 0) + (b[o + 1]! << 16) + (b[o + 2]! << 8) + b[o + 3]!;
}

/**
 * True when `bytes` (one received WebSocket message, starting at a frame
 * boundary) holds one or more whole HEARTBEAT frames with state ACTIVE and
 * nothing else. A LEAVE, any other op or a partial frame: false.
 */
export function heartbeatsOnly(bytes: Uint8Array): boolean {
  if (bytes.length === 0 || bytes.length % HEARTBEAT_FRAME_BYTES !== 0) return false;
  for (let o = 0; o < bytes.length; o += HEARTBEAT_FRAME_BYTES) {
    if (lengthAt(bytes, o) !== HEARTBEAT_FRAME_BYTES - 4 || bytes[o + 4] !== Op.HEARTBEAT) return false;
    if (bytes[o + HEARTBEAT_FRAME_BYTES - 1] !== HeartbeatState.ACTIVE) return false;
  }
  return true;
}

/** True when `bytes` (whole frames the session writes) is one or more empty OK frames answering HEARTBEAT, and nothing else. */
export function heartbeatAnswersOnly(bytes: Uint8Array): boolean {
  if (bytes.length === 0 || bytes.length % HEARTBEAT_OK_BYTES !== 0) return false;
  for (let o = 0; o < bytes.length; o += HEARTBEAT_OK_BYTES) {
    if (lengthAt(bytes, o) !== HEARTBEAT_OK_BYTES - 4 || bytes[o + 4] !== Op.OK || bytes[o + 5] !== Op.HEARTBEAT) return false;
    if (bytes[o + 6] !== 0 || bytes[o + 7] !== 0 || bytes[o + 8] !== 0 || bytes[o + 9] !== 0) return false;
  }
  return true;
}
