/**
 * Group commit of fact batches per router (DESIGN 3.2): at most one `facts` signal in flight to each router from one
 * client; what arrives for it meanwhile goes out together in the next signal. A busy feed then costs a signal per
 * router per round trip, not one per request, and a hot router is written once per round trip, not once per fact.
 */
import type { FactBatch } from '../../workflows/messages.js';

/** Facts and subject facts in one signal at most: 500 facts of the largest size stay well under the payload limit. */
export const MAX_ENTRIES_PER_SIGNAL = 500;

interface Waiting {
  batch: RouterBatch;
  entries: number;
  resolve: () => void;
  reject: (error: unknown) => void;
}

interface Router {
  shard: number;
  waiting: Waiting[];
  sending: boolean;
}

/** A batch as the bridge sends it: with its retention, which also starts the router. */
export type RouterBatch = FactBatch & { retention: string };

const entriesOf = (batch: FactBatch): number => (batch.facts?.length ?? 0) + (batch.subjects?.length ?? 0);

/** Joins batches in their order of arrival; the retention is the latest one's (all come from one bridge's settings). */
export function joinBatches(batches: readonly [RouterBatch, ...RouterBatch[]]): RouterBatch {
  const facts = batches.flatMap((batch) => batch.facts ?? []);
  const subjects = batches.flatMap((batch) => batch.subjects ?? []);
  return {
    ...(facts.length > 0 ? { facts } : {}),
    ...(subjects.length > 0 ? { subjects } : {}),
    retention: batches[batches.length - 1]!.retention,
  };
}

export class RouterSignals {
  private readonly routers = new Map<string, Router>();

  constructor(
    private readonly signal: (workflowId: string, shard: number, batch: RouterBatch) => Promise<void>,
    private readonly maxEntries = MAX_ENTRIES_PER_SIGNAL,
  ) {}

  /** Resolves once `batch` is stored in router `workflowId` (in this signal or a later one that carries it). */
  send(workflowId: string, shard: number, batch: RouterBatch): Promise<void> {
    let router = this.routers.get(workflowId);
    if (!router) this.routers.set(workflowId, (router = { shard, waiting: [], sending: false }));
    const stored = new Promise<void>((resolve, reject) =>
      router.waiting.push({ batch, entries: entriesOf(batch), resolve, reject }),
    );
    if (!router.sending) void this.drain(workflowId, router);
    return stored;
  }

  /** Signals the router until nothing waits for it, each signal taking what waited when it left. */
  private async drain(workflowId: string, router: Router): Promise<void> {
    router.sending = true;
    while (router.waiting.length > 0) {
      const taken: [Waiting, ...Waiting[]] = [router.waiting.shift()!];
      let entries = taken[0]!.entries;
      while (router.waiting.length > 0 && entries + router.waiting[0]!.entries <= this.maxEntries) {
        const next = router.waiting.shift()!;
        entries += next.entries;
        taken.push(next);
      }
      try {
        await this.signal(
          workflowId,
          router.shard,
          joinBatches(taken.map((waiting) => waiting.batch) as [RouterBatch, ...RouterBatch[]]),
        );
        for (const waiting of taken) waiting.resolve();
      } catch (error) {
        for (const waiting of taken) waiting.reject(error);
      }
    }
    router.sending = false;
    this.routers.delete(workflowId);
  }
}
