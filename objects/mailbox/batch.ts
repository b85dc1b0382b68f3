/**
 * Reply batching (pure): admits candidate messages, already in delivery
 * order, into one FETCH/QUERY reply until the message limit or the payload
 * byte budget is reached. The first message is always admitted, so one
 * message larger than the budget can never stall a consumer.
 */
export class ReplyBudget {
  private count = 0;
  private bytes = 0;

  constructor(
    /** Most messages in the reply. */
    readonly limit: number,
    /** Most payload bytes in the reply (before base64). */
    readonly budgetBytes: number,
  ) {}

  /** Messages admitted so far. */
  get admitted(): number {
    return this.count;
  }

  /** True when no further message can be admitted. */
  get full(): boolean {
    return this.count >= this.limit;
  }

  /** Admits a message of `size` bytes if it fits; returns whether it did. */
  admit(size: number): boolean {
    if (this.full) return false;
    if (this.count > 0 && this.bytes + size > this.budgetBytes) return false;
    this.count++;
    this.bytes += size;
    return true;
  }
}
