/**
 * Group commit of fact batches per router (DESIGN 3.2): at most one `facts` signal in flight to each router from one
 * client; what arrives for it meanwhile goes out together in the next signal. A busy feed then costs a signal per
 * router per round trip, not one per request, and a hot router is written once per round trip, not once per fact.
 */
import type { FactBatch } from '../../workflows/messages.js';

/**
 * Bytes (as JSON) that batches joined into one signal stay under: small enough that the router's history, which a
 * lapse decision reads back, does not grow by large events under a busy feed.
 */
export const MAX_SIGNAL_BYTES = 32 * 1024;

/** Bytes a bridge holds for one router while its signal is in flight; past them a request is refused at once. */
export const MAX_WAITING_BYTES = 8 * 1024 * 1024;

/** The bridge holds too much for a router that is slow to answer: RESOURCE_EXHAUSTED, a 503 with `Retry-After`. */
export class RouterQueueFullError extends Error {
  readonly code = 8;
  readonly details: string;
  constructor(workflowId: string, waitingBytes: number) {
    super(`the bridge already holds ${waitingBytes} bytes of facts for ${workflowId}, which is slow to answer`);
    this.name = 'RouterQueueFullError';
    this.details = this.message;
  }
}

interface Waiting {
  batch: RouterBatch;
  bytes: number;
  resolve: () => void;
  reject: (error: unknown) => void;
}

/** A router with a signal in flight: it is in `RouterSignals.routers` from its first batch until nothing waits. */
interface Router {
  shard: number;
  waiting: Waiting[];
  waitingBytes: number;
}

/** A batch as the bridge sends it: with its retention, which also starts the router. */
export type RouterBatch = FactBatch & { retention: string };

const bytesOf = (batch: FactBatch): number => Buffer.byteLength(JSON.stringify(batch));

/** The first of equal entries stays: a resend joins the batch of the request it repeats, at its first reception. */
function firstOfEach<T>(entries: readonly T[], identity: (entry: T) => string): T[] {
  const seen = new Set<string>();
  return entries.filter((entry) => {
    const id = identity(entry);
    if (seen.has(id)) return false;
    seen.add(id);
    return true;
  });
}

/**
 * Joins batches in their order of arrival, each fact once (by key, observation and source, as its router tells a
 * re-delivery) and each subject fact once; the retention is the latest one's (all come from one bridge's settings).
 */
export function joinBatches(batches: readonly [RouterBatch, ...RouterBatch[]]): RouterBatch {
  const facts = firstOfEach(
    batches.flatMap((batch) => batch.facts ?? []),
    (f) => JSON.stringify([f.factKey, f.observedAt, f.source]),
  );
  const subjects = firstOfEach(
    batches.flatMap((batch) => batch.subjects ?? []),
    (f) => JSON.stringify([f.subject.type, f.subject.id, f.factKey, f.observedAt]),
  );
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
    private readonly bounds = { signalBytes: MAX_SIGNAL_BYTES, waitingBytes: MAX_WAITING_BYTES },
  ) {}

  /** Resolves once `batch` is stored in router `workflowId` (in this signal or a later one that carries it). */
  send(workflowId: string, shard: number, batch: RouterBatch): Promise<void> {
    const sending = this.routers.get(workflowId);
    const router = sending ?? { shard, waiting: [], waitingBytes: 0 };
    const bytes = bytesOf(batch);
    if (router.waiting.length > 0 && router.waitingBytes + bytes > this.bounds.waitingBytes) {
      return Promise.reject(new RouterQueueFullError(workflowId, this.bounds.waitingBytes));
    }
    router.waitingBytes += bytes;
    const stored = new Promise<void>((resolve, reject) => router.waiting.push({ batch, bytes, resolve, reject }));
    if (!sending) {
      this.routers.set(workflowId, router);
      void this.drain(workflowId, router);
    }
    return stored;
  }

  /** Signals the router until nothing waits for it, each signal taking what waited when it left. */
  private async drain(workflowId: string, router: Router): Promise<void> {
    while (router.waiting.length > 0) {
      const taken: [Waiting, ...Waiting[]] = [router.waiting.shift()!];
      let bytes = taken[0].bytes;
      while (router.waiting.length > 0 && bytes + router.waiting[0]!.bytes <= this.bounds.signalBytes) {
        const next = router.waiting.shift()!;
        bytes += next.bytes;
        taken.push(next);
      }
      router.waitingBytes -= bytes;
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
    this.routers.delete(workflowId);
  }
}
