/** Load generation: JSON requests to the bridge over real HTTP, and a fixed number of tasks at a fixed concurrency. */
import { setTimeout as sleep } from 'node:timers/promises';
import { retryAfterMs } from './open-loop.js';

/** POSTs `body` as JSON with a bearer token: the fetch's promise, for a caller that reads the answer itself. */
export const post = (url: string, token: string, body: unknown, signal?: AbortSignal): Promise<Response> =>
  fetch(url, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal,
  });

/**
 * POSTs `body` as JSON with a bearer token; resolves with the parsed answer of a 200. As a client that follows the
 * bridge's advice, a 429 or 503 is sent again after its Retry-After (1 s when it gives none, 30 s at most), up to
 * `attempts` sends (the same request, so a retry completes what the first began); throws otherwise.
 */
export async function postJsonResending<T = unknown>(
  url: string,
  token: string,
  body: unknown,
  attempts = 5,
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    const response = await post(url, token, body);
    const text = await response.text();
    if (response.status === 200) return JSON.parse(text) as T;
    if ((response.status !== 429 && response.status !== 503) || attempt >= attempts)
      throw new Error(`bridge answered HTTP ${response.status} (attempt ${attempt}): ${text.slice(0, 500)}`);
    await sleep(Math.min(retryAfterMs(response.headers.get('retry-after')) ?? 1_000, 30_000));
  }
}

/** postJsonResending with one send: any answer but a 200 throws. */
export const postJson = <T = unknown>(url: string, token: string, body: unknown): Promise<T> =>
  postJsonResending<T>(url, token, body, 1);

/**
 * Runs `task(0..count-1)` with at most `concurrency` in flight: the wall-clock ms from first start to last end, each
 * task's latency and the errors. A failed task is not retried; after `maxErrors` failures, or once `stop` says so, no
 * task is begun any more and the pool ends with the ones in flight.
 */
export async function runPool(
  count: number,
  concurrency: number,
  task: (index: number) => Promise<unknown>,
  options: { maxErrors?: number; onProgress?: (done: number) => void; stop?: () => boolean } = {},
): Promise<{ elapsedMs: number; latenciesMs: number[]; errors: string[] }> {
  const latenciesMs = new Array<number>(count).fill(Number.NaN);
  const errors: string[] = [];
  let next = 0;
  let done = 0;
  const maxErrors = options.maxErrors ?? 20;
  const started = performance.now();
  let lastReport = Date.now();
  const lane = async () => {
    while (next < count && errors.length < maxErrors && !options.stop?.()) {
      const index = next++;
      const t0 = performance.now();
      try {
        await task(index);
        latenciesMs[index] = performance.now() - t0;
      } catch (error) {
        errors.push(error instanceof Error ? error.message : String(error));
      }
      done++;
      if (options.onProgress && Date.now() - lastReport >= 5_000) {
        lastReport = Date.now();
        options.onProgress(done);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, lane));
  return { elapsedMs: performance.now() - started, latenciesMs: latenciesMs.filter((v) => !Number.isNaN(v)), errors };
}
