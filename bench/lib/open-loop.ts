/**
 * Open-loop load: each request sent at its instant whatever is outstanding (a fixed offered rate). A 429 or 503 is
 * sent again after its Retry-After, no answer after a second, up to a bounded number of attempts; any other answer is
 * final. After the schedule, outstanding requests get a bounded tail, then are abandoned; never answered 200 is lost.
 */
import { setMaxListeners } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';

/** How one attempt was answered: 200, 429, 503, any other status, or no answer at all. */
export type AnswerClass = '200' | '429' | '503' | 'other' | 'none';

export interface Attempt {
  answer: AnswerClass;
  retryAfterMs?: number;
  /** For an answer other than 200: what it said (the report quotes a few). */
  detail?: string;
  /** Calls the attempt made (raw: 0 for a request with nothing to do). */
  calls?: number;
}

/** A request as sent: its first send, its 200 if one came (epoch ms), and whether the tail's end cut it off. */
export interface Sent<T> {
  request: T;
  sentAt: number;
  answeredAt?: number;
  attempts: number;
  calls: number;
  abandoned?: boolean;
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

/**
 * Sends `requests` (each at `t0 + atMs`) with `send`, which gets an AbortSignal per attempt; after `durationMs`
 * the outstanding ones get `tailMs` more. Answers counts every attempt's answer; details and refusals quote the first
 * few other answers and 429 / 503s; lost counts the requests never answered 200, abandoned those the tail cut off.
 */
export async function runOpenLoop<T extends { atMs: number }>(
  requests: readonly T[],
  send: (request: T, signal: AbortSignal) => Promise<Attempt>,
  options: { t0: number; durationMs: number; tailMs: number; maxAttempts: number; attemptTimeoutMs: number },
) {
  const stop = new AbortController();
  setMaxListeners(0, stop.signal); // every attempt in flight listens on it
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
      if (entry.attempts >= options.maxAttempts) return;
      const waitMs = Math.min(attempt.retryAfterMs ?? RETRY_WITHOUT_ANSWER_MS, MAX_RETRY_AFTER_MS);
      try {
        await sleep(waitMs, undefined, { signal: stop.signal });
      } catch {
        entry.abandoned = true;
        return;
      }
    }
  };

  for (const request of requests) {
    const wait = options.t0 + request.atMs - Date.now();
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
