/**
 * One timer per deadline, kept across the loop's wakes: a wake that leaves the next deadline where it was starts no
 * timer (a billable action) and cancels none, and a workflow that closes leaves its timer to the server, which drops
 * it with the run, rather than writing a TIMER_CANCELED it has no use for.
 */
import { CancellationScope, condition, isCancellation, sleep } from '@temporalio/workflow';

interface Running {
  atMs: number;
  scope: CancellationScope;
  fired: boolean;
}

export class DeadlineTimer {
  private running: Running | undefined;

  /**
   * Resolves when `wake()` holds or the deadline `atMs` (epoch ms, workflow time) has come; no deadline: `wake()` only.
   * A timer already running for the same instant is the one waited on.
   */
  async wait(wake: () => boolean, deadline?: { atMs: number; summary: string }): Promise<void> {
    if (this.running && (!deadline || this.running.atMs !== deadline.atMs)) {
      this.running.scope.cancel();
      this.running = undefined;
    }
    if (deadline && !this.running) this.running = this.start(deadline.atMs, deadline.summary);
    const running = this.running;
    await condition(() => wake() || running?.fired === true);
    if (running?.fired) this.running = undefined;
  }

  private start(atMs: number, summary: string): Running {
    const running: Running = { atMs, scope: new CancellationScope(), fired: false };
    running.scope
      .run(() => sleep(Math.max(atMs - Date.now(), 1), { summary }))
      .then(
        () => void (running.fired = true),
        (error: unknown) => {
          if (!isCancellation(error)) throw error;
        },
      );
    return running;
  }
}
