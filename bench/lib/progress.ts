/** Progress lines on stderr while the benchmark runs, each with the time since the start. */
const started = Date.now();

/** Prints one progress line. */
export function progress(message: string): void {
  const seconds = ((Date.now() - started) / 1000).toFixed(1).padStart(7);
  process.stderr.write(`[bench ${seconds}s] ${message}\n`);
}

/** Resolves after `ms`; only where there is no condition to wait for (a fixed observation window). */
export const delay = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls `check` until it returns true, calling `onTick` every 5 s; throws after `timeoutMs`, naming `what`. */
export async function waitUntil(
  what: string,
  check: () => Promise<boolean> | boolean,
  options: { timeoutMs: number; intervalMs?: number; onTick?: () => void },
): Promise<void> {
  const deadline = Date.now() + options.timeoutMs;
  let lastTick = Date.now();
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${options.timeoutMs} ms waiting for ${what}`);
    if (options.onTick && Date.now() - lastTick >= 5_000) {
      options.onTick();
      lastTick = Date.now();
    }
    await delay(options.intervalMs ?? 250);
  }
}
