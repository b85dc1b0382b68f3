/**
 * Typed MortarMQ v0 frames: one interface per op (spec §2), fields in the
 * spec's byte order, named in camelCase. Widths: u8/u16/u32 are `number`,
 * u64 is `bigint`, length-prefixed byte fields are `Uint8Array` (the length
 * prefix is implied by the array). Decoded byte fields are zero-copy views
 * into the received bytes.
 */
import type { Op } from "./constants";

/** C→S. First request on a connection. Unknown client_flags/reserved bits are ignored in v0. */
export interface ConnectFrame {
  op: typeof Op.CONNECT;
  protocolVersion: number; // u8
  clientFlags: number; // u16
  token: Uint8Array; // u16 length
  reserved: number; // u32
}

/**
 * Topic retention values on the wire (extension, docs/protocol.md "Topic
 * retention"). 0 = unlimited for the three limits.
 */
export interface RetentionValues {
  retentionMs: bigint; // u64, ms
  retentionBytes: bigint; // u64, bytes per partition (keys + values)
  retentionMessages: bigint; // u64, records per partition
  discard: number; // u8, Discard
}

/** The DECLARE retention tail: `fields` (RetentionFields) says which values the request sets. */
export interface DeclareRetention extends RetentionValues {
  fields: number; // u8
}

/**
 * C→S. Create (or with DeclareFlags.DELETE, delete) a topic and its `.dlq`
 * twin. `retention` is the tail announced by DeclareFlags.RETENTION: present
 * exactly when that bit is set.
 */
export interface DeclareFrame {
  op: typeof Op.DECLARE;
  topic: Uint8Array; // u16 length, UTF-8
  partitionCount: number; // u16
  flags: number; // u16
  retention?: DeclareRetention; // tail: fields:u8, retention_ms:u64, retention_bytes:u64, retention_messages:u64, discard:u8
}

/** C→S. Publish one message. producerId/producerSeq 0/0 = non-idempotent. */
export interface PubFrame {
  op: typeof Op.PUB;
  topicId: number; // u16
  partition: number; // u16
  producerId: bigint; // u64
  producerSeq: bigint; // u64
  flags: number; // u16
  key: Uint8Array; // u16 length
  value: Uint8Array; // u32 length
}

/** C→S. Join `group` on `topicId`; partition must be SUB_PARTITION_ANY in v0. */
export interface SubFrame {
  op: typeof Op.SUB;
  group: Uint8Array; // u16 length, UTF-8
  topicId: number; // u16
  partition: number; // u16
  startPolicy: number; // u8
  creditCount: number; // u16, messages
  creditBytes: number; // u32, bytes
  flags: number; // u16
}

/** The delivery an ACK/NACK settles: echoes the MSG's ids and ownership_epoch. */
export interface DeliveryRef {
  subscriptionId: number; // u16
  topicId: number; // u16
  partition: number; // u16
  seq: bigint; // u64, the MSG sequence
  deliveryId: bigint; // u64
  ownershipEpoch: bigint; // u64
}

/** C→S. Acknowledge a delivery (or with AckFlags.PROGRESS, extend its deadline). */
export interface AckFrame extends DeliveryRef {
  op: typeof Op.ACK;
  flags: number; // u16
}

/** C→S. Negatively acknowledge a delivery (reason: NackReason). */
export interface NackFrame extends DeliveryRef {
  op: typeof Op.NACK;
  reason: number; // u8
  flags: number; // u16
}

/** C→S. Liveness probe; answered by an empty OK. */
export interface PingFrame {
  op: typeof Op.PING;
}

/** Both ways. Error answer to `requestOp` (0 when not tied to a request). */
export interface ErrFrame {
  op: typeof Op.ERR;
  code: number; // u16
  requestOp: number; // u8
  message: Uint8Array; // u16 length, UTF-8, ≤ MAX_ERR_MESSAGE
}

/** Both ways. Success answer to `requestOp`; result layout depends on the op. */
export interface OkFrame {
  op: typeof Op.OK;
  requestOp: number; // u8
  result: Uint8Array; // u32 length, ≤ MAX_OK_RESULT_LEN
}

/** S→C push. One delivery; not a response, takes no FIFO slot. */
export interface MsgFrame {
  op: typeof Op.MSG;
  subscriptionId: number; // u16
  topicId: number; // u16
  partition: number; // u16
  sequence: bigint; // u64
  deliveryId: bigint; // u64
  attempt: number; // u16, 1 on first delivery
  ownershipEpoch: bigint; // u64, echoed in ACK/NACK
  producerId: bigint; // u64
  producerSeq: bigint; // u64
  flags: number; // u16
  key: Uint8Array; // u16 length
  value: Uint8Array; // u32 length
}

/** C→S. Fetch deliveries for a pull-mode subscription; MSG×N then OK. */
export interface PullFrame {
  op: typeof Op.PULL;
  subscriptionId: number; // u16
  memberId: bigint; // u64
  membershipEpoch: number; // u32
  assignmentEpoch: number; // u32
  ownershipEpochs: bigint[]; // u16 count, u64 each
  maxMsgs: number; // u16
  maxBytes: number; // u32, bytes
  waitMs: number; // u16, ms
  minBytes: number; // u32, bytes
}

/** C→S. Group member liveness (state ACTIVE) or leave (state LEAVE). */
export interface HeartbeatFrame {
  op: typeof Op.HEARTBEAT;
  subscriptionId: number; // u16
  memberId: bigint; // u64
  membershipEpoch: number; // u32
  assignmentEpoch: number; // u32
  state: number; // u8
}

/** S→C push. Partition ASSIGN/REVOKE; answered by CONTROL_ACK echoing noticeId. */
export interface NoticeFrame {
  op: typeof Op.NOTICE;
  noticeId: bigint; // u64
  kind: number; // u8
  groupId: number; // u16
  membershipEpoch: number; // u32
  assignmentEpoch: number; // u32
  ownershipEpoch: bigint; // u64
  topicId: number; // u16
  partition: number; // u16
  memberId: bigint; // u64
}

/** C→S. Confirms a NOTICE. */
export interface ControlAckFrame {
  op: typeof Op.CONTROL_ACK;
  noticeId: bigint; // u64
  noticeKind: number; // u8
  groupId: number; // u16
  membershipEpoch: number; // u32
  assignmentEpoch: number; // u32
  ownershipEpoch: bigint; // u64
  result: number; // u8
}

/** C→S. SET or ADD to a push subscription's credit window. */
export interface CreditFrame {
  op: typeof Op.CREDIT;
  subscriptionId: number; // u16
  membershipEpoch: number; // u32
  ownershipEpoch: bigint; // u64
  mode: number; // u8
  creditCount: number; // u16, messages
  creditBytes: number; // u32, bytes
  reserved: number; // u32
}

/** Any v0 frame, discriminated by `op`. */
export type Frame =
  | ConnectFrame
  | DeclareFrame
  | PubFrame
  | SubFrame
  | AckFrame
  | NackFrame
  | PingFrame
  | ErrFrame
  | OkFrame
  | MsgFrame
  | PullFrame
  | HeartbeatFrame
  | NoticeFrame
  | ControlAckFrame
  | CreditFrame;

/** The frame type for one op value. */
export type FrameOf<O extends Frame["op"]> = Extract<Frame, { op: O }>;
