/**
 * Forwarding from a router to its subscribers, coalesced: at most one pending item per subscriber, taken in bounded
 * batches by the router's main loop (not by its handlers), so that a busy router writes one marker of bounded size a
 * batch and its handlers finish at once, which lets it continue as new. The queue only; a batch goes out as the
 * router's signals, or a large one by the local activity `forwardFacts` (fact-router.ts CLIENT_FORWARDS_FROM).
 */

/** How many forwards one batch sends at most (one local activity's, whose marker lists their subscribers' ids). */
export const OUTBOX_BATCH = 500;

export class Outbox<T> {
  private readonly pending: Map<string, T>;

  constructor(
    /** Given what is pending for a subscriber (if anything) and a new item: what to send it. */
    private readonly merge: (pending: T | undefined, next: T) => T,
    carried: Array<{ workflowId: string; fact: T }> = [],
  ) {
    this.pending = new Map(carried.map(({ workflowId, fact }) => [workflowId, fact]));
  }

  get size(): number {
    return this.pending.size;
  }

  has(workflowId: string): boolean {
    return this.pending.has(workflowId);
  }

  add(workflowId: string, item: T): void {
    this.pending.set(workflowId, this.merge(this.pending.get(workflowId), item));
  }

  delete(workflowId: string): void {
    this.pending.delete(workflowId);
  }

  /** What is still to send, for continue-as-new. */
  carry(): Array<{ workflowId: string; fact: T }> {
    return [...this.pending].map(([workflowId, fact]) => ({ workflowId, fact }));
  }

  /** Takes the next batch off the queue, oldest first: at most OUTBOX_BATCH subscribers and their items. */
  take(): Array<[string, T]> {
    const batch = [...this.pending].slice(0, OUTBOX_BATCH);
    for (const [workflowId] of batch) this.pending.delete(workflowId);
    return batch;
  }
}
