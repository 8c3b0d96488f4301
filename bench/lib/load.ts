/**
 * Load generation: JSON requests to the bridge over real HTTP, and a fixed number of tasks run at a fixed
 * concurrency.
 */

/** POSTs `body` as JSON with a bearer token; resolves with the parsed answer of a 200, throws otherwise. */
export async function postJson<T = unknown>(url: string, token: string, body: unknown): Promise<T> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  if (response.status !== 200) throw new Error(`bridge answered HTTP ${response.status}: ${text.slice(0, 500)}`);
  return JSON.parse(text) as T;
}

export interface PoolResult {
  /** Wall-clock ms from the first task's start to the last task's end. */
  elapsedMs: number;
  /** Per-task latency in ms, in task order. */
  latenciesMs: number[];
  errors: string[];
}

/**
 * Runs `task(0..count-1)` with at most `concurrency` in flight. A failed task is recorded, not retried; the run
 * stops early after `maxErrors` failures (a broken setup should not grind through the whole count).
 */
export async function runPool(
  count: number,
  concurrency: number,
  task: (index: number) => Promise<unknown>,
  options: { maxErrors?: number; onProgress?: (done: number) => void } = {},
): Promise<PoolResult> {
  const latenciesMs = new Array<number>(count).fill(Number.NaN);
  const errors: string[] = [];
  let next = 0;
  let done = 0;
  const maxErrors = options.maxErrors ?? 20;
  const started = performance.now();
  let lastReport = Date.now();
  const lane = async () => {
    while (next < count && errors.length < maxErrors) {
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
