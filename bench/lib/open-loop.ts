/**
 * Open-loop load: every request is sent at its scheduled instant, whatever answers are still outstanding (a fixed
 * offered rate, not a fixed concurrency). A 429 or 503 is sent again after its Retry-After, and a request with no
 * answer (timeout, connection refused) after a second, up to a bounded number of attempts; any other answer is final.
 * The run stops by itself: after the schedule, outstanding requests get a bounded tail, then are abandoned. A request
 * never answered 200 is lost.
 */
import { setMaxListeners } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';

/** How one attempt was answered: 200, 429, 503, any other status, or no answer at all. */
export type AnswerClass = '200' | '429' | '503' | 'other' | 'none';

export interface Attempt {
  answer: AnswerClass;
  /** From Retry-After, for a 429 or 503. */
  retryAfterMs?: number;
  /** For an answer other than 200: what it said (the report quotes a few). */
  detail?: string;
  /** Calls the attempt made (raw: 0 for a request with nothing to do). */
  calls?: number;
}

export interface Sent<T> {
  request: T;
  /** Epoch ms of the first send. */
  sentAt: number;
  /** Epoch ms of the 200, if one came. */
  answeredAt?: number;
  attempts: number;
  calls: number;
  /** Still unanswered when the tail ended (not refused on every attempt). */
  abandoned?: boolean;
}

export interface OpenLoopOptions {
  /** Epoch ms the schedule's offsets count from. */
  t0: number;
  /** Scheduled length: the tail starts after it. */
  durationMs: number;
  /** How long outstanding requests may still take after the schedule's end before they are abandoned. */
  tailMs: number;
  maxAttempts: number;
  attemptTimeoutMs: number;
}

export interface OpenLoopResult<T> {
  sent: Sent<T>[];
  /** Answers of every attempt, by class (abandoned attempts are not answers). */
  answers: Record<AnswerClass, number>;
  lost: number;
  /** Of the lost, those cut off by the end of the tail (the rest were refused on every attempt, or answered otherwise). */
  abandoned: number;
  /** Epoch ms of the last 200. */
  lastAnswerAt: number;
  /** The first few final answers other than 200. */
  details: string[];
  /** The first few 429 and 503 answers. */
  refusals: string[];
}

const RETRY_WITHOUT_ANSWER_MS = 1_000;
const MAX_RETRY_AFTER_MS = 30_000;

/** The Retry-After header in ms (seconds, or an HTTP date); undefined when absent or unreadable. */
export function retryAfterMs(header: string | null): number | undefined {
  if (header === null) return undefined;
  const seconds = Number(header);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const date = Date.parse(header);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}

/** Sends `requests` (each at `t0 + atMs`) with `send`, which gets an AbortSignal per attempt. */
export async function runOpenLoop<T extends { atMs: number }>(
  requests: readonly T[],
  send: (request: T, signal: AbortSignal) => Promise<Attempt>,
  options: OpenLoopOptions,
): Promise<OpenLoopResult<T>> {
  const stop = new AbortController();
  // Every attempt in flight listens on it.
  setMaxListeners(0, stop.signal);
  const answers: Record<AnswerClass, number> = { '200': 0, '429': 0, '503': 0, other: 0, none: 0 };
  const details: string[] = [];
  const refusals: string[] = [];
  const sent: Sent<T>[] = [];
  const outstanding = new Set<Promise<void>>();
  let lastAnswerAt = options.t0;

  const drive = async (entry: Sent<T>) => {
    while (entry.attempts < options.maxAttempts && !stop.signal.aborted) {
      entry.attempts++;
      let attempt: Attempt;
      try {
        attempt = await send(
          entry.request,
          AbortSignal.any([stop.signal, AbortSignal.timeout(options.attemptTimeoutMs)]),
        );
      } catch (error) {
        attempt = { answer: 'none', detail: error instanceof Error ? error.message : String(error) };
      }
      // Cut off by the end of the tail: not an answer.
      if (stop.signal.aborted) {
        entry.abandoned = true;
        return;
      }
      answers[attempt.answer]++;
      entry.calls += attempt.calls ?? 1;
      if (attempt.answer === '200') {
        entry.answeredAt = Date.now();
        lastAnswerAt = Math.max(lastAnswerAt, entry.answeredAt);
        return;
      }
      if (attempt.answer === 'other') {
        if (details.length < 5 && attempt.detail) details.push(attempt.detail.slice(0, 300));
        return;
      }
      if (refusals.length < 3 && attempt.detail && (attempt.answer === '429' || attempt.answer === '503'))
        refusals.push(attempt.detail.slice(0, 300));
      const waitMs =
        attempt.answer === 'none'
          ? RETRY_WITHOUT_ANSWER_MS
          : Math.min(attempt.retryAfterMs ?? RETRY_WITHOUT_ANSWER_MS, MAX_RETRY_AFTER_MS);
      if (entry.attempts >= options.maxAttempts) return;
      try {
        await sleep(waitMs, undefined, { signal: stop.signal });
      } catch {
        entry.abandoned = true;
        return;
      }
    }
  };

  for (const request of requests) {
    const due = options.t0 + request.atMs;
    const wait = due - Date.now();
    if (wait > 1) await sleep(wait);
    const entry: Sent<T> = { request, sentAt: Date.now(), attempts: 0, calls: 0 };
    sent.push(entry);
    const driving: Promise<void> = drive(entry).finally(() => outstanding.delete(driving));
    outstanding.add(driving);
  }

  const tailEnds = options.t0 + options.durationMs + options.tailMs;
  const tail = new AbortController();
  await Promise.race([
    Promise.all(outstanding),
    sleep(Math.max(0, tailEnds - Date.now()), undefined, { signal: tail.signal }).catch(() => {}),
  ]);
  tail.abort();
  stop.abort();
  await Promise.all(outstanding);
  return {
    sent,
    answers,
    lost: sent.filter((s) => s.answeredAt === undefined).length,
    abandoned: sent.filter((s) => s.abandoned).length,
    lastAnswerAt,
    details,
    refusals,
  };
}
