/**
 * Group commit of fact batches per router (DESIGN 3.2): at most one `facts` signal in flight to each router from one
 * client; what arrives for it meanwhile goes out together in the next signal. A busy feed then costs a signal per
 * router per round trip, not one per request, and a hot router is written once per round trip, not once per fact.
 */
import type { Fact } from '../../core/types.js';
import type { FactBatch, SubjectFact } from '../../workflows/messages.js';

/**
 * Bytes (as JSON) that batches joined into one signal stay under: small enough that the router's history, which a
 * lapse decision reads back, does not grow by large events under a busy feed.
 */
export const MAX_SIGNAL_BYTES = 32 * 1024;

/** Bytes a bridge holds for one router while its signal is in flight; past them a request is refused at once. */
export const MAX_WAITING_BYTES = 8 * 1024 * 1024;

/**
 * How long a bridge remembers the facts it stored or is storing: a resend within it (after a 503 at the fact wait, while
 * the first store ran on) waits for that store, or is answered at once once it landed, instead of storing them again.
 */
export const REMEMBER_STORED_MS = 120_000;

/** Facts (and subject facts) remembered at most, the oldest forgotten first. */
export const MAX_REMEMBERED = 100_000;

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

/** A fact as its router tells a re-delivery: by key, observation and source. */
const factIdentity = (f: { factKey: string; observedAt: string; source: string }): string =>
  JSON.stringify([f.factKey, f.observedAt, f.source]);
/** A fact on a subject, as its router keeps it: by subject, key and observation. */
const subjectIdentity = (f: { subject: { type: string; id: string }; factKey: string; observedAt: string }): string =>
  JSON.stringify([f.subject.type, f.subject.id, f.factKey, f.observedAt]);

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

/** A batch of these facts and subject facts, leaving out an empty list. */
const batchOf = (facts: Fact[], subjects: SubjectFact[], retention: string): RouterBatch => ({
  ...(facts.length > 0 ? { facts } : {}),
  ...(subjects.length > 0 ? { subjects } : {}),
  retention,
});

/**
 * Joins batches in their order of arrival, each fact once (by key, observation and source, as its router tells a
 * re-delivery) and each subject fact once; the retention is the latest one's (all come from one bridge's settings).
 */
export function joinBatches(batches: readonly [RouterBatch, ...RouterBatch[]]): RouterBatch {
  const facts = firstOfEach(
    batches.flatMap((batch) => batch.facts ?? []),
    factIdentity,
  );
  const subjects = firstOfEach(
    batches.flatMap((batch) => batch.subjects ?? []),
    subjectIdentity,
  );
  return batchOf(facts, subjects, batches[batches.length - 1]!.retention);
}

/** A fact this bridge stored or is storing in a router: the store that carries it, and when it was sent. */
interface Remembered {
  stored: Promise<void>;
  atMs: number;
}

export class RouterSignals {
  private readonly routers = new Map<string, Router>();
  /** By router and identity, oldest first (router-signals.ts REMEMBER_STORED_MS). */
  private readonly remembered = new Map<string, Remembered>();

  constructor(
    private readonly signal: (workflowId: string, shard: number, batch: RouterBatch) => Promise<void>,
    private readonly bounds = { signalBytes: MAX_SIGNAL_BYTES, waitingBytes: MAX_WAITING_BYTES },
    private readonly memory = { ms: REMEMBER_STORED_MS, entries: MAX_REMEMBERED, now: () => Date.now() },
  ) {}

  /**
   * Resolves once `batch` is stored in router `workflowId`. A fact this bridge stored there lately, or is storing (a
   * resend after a 503 while the first store runs on), is not sent again: the answer waits for the store that carries
   * it. Without that, every resend past the fact wait stored the same facts once more, and a slow server got slower.
   */
  send(workflowId: string, shard: number, batch: RouterBatch): Promise<void> {
    const nowMs = this.memory.now();
    this.forget(nowMs);
    const carrying: Array<Promise<void>> = [];
    // The ids of the facts not remembered, each computed once: they are remembered under it once queued.
    const ids: string[] = [];
    const fresh = <T>(entries: readonly T[] | undefined, identity: (entry: T) => string): T[] =>
      (entries ?? []).filter((entry) => {
        const id = `${workflowId} ${identity(entry)}`;
        const known = this.remembered.get(id);
        if (known) carrying.push(known.stored);
        else ids.push(id);
        return !known;
      });
    const facts = fresh(batch.facts, factIdentity);
    const subjects = fresh(batch.subjects, subjectIdentity);
    if (ids.length === 0) return Promise.all(carrying).then(() => undefined);
    const stored = this.enqueue(workflowId, shard, batchOf(facts, subjects, batch.retention));
    for (const id of ids) this.remembered.set(id, { stored, atMs: nowMs });
    // A store that failed is forgotten at once: the resend stores the facts again.
    stored.catch(() => {
      for (const id of ids) if (this.remembered.get(id)?.stored === stored) this.remembered.delete(id);
    });
    return Promise.all([stored, ...carrying]).then(() => undefined);
  }

  /** Forgets what was sent more than `memory.ms` ago, and the oldest past `memory.entries`. */
  private forget(nowMs: number): void {
    for (const [id, known] of this.remembered) {
      if (known.atMs > nowMs - this.memory.ms && this.remembered.size <= this.memory.entries) break;
      this.remembered.delete(id);
    }
  }

  /** Queues `batch` for router `workflowId`: it goes in the next signal to it, or at once when none is in flight. */
  private enqueue(workflowId: string, shard: number, batch: RouterBatch): Promise<void> {
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
