/**
 * The routers' workflow task slots (DESIGN 3.2): at most `perSecond` router tasks begun a second, a second's worth at
 * once. On the server a workflow task costs about ten signals, so a router worker that took one task per signal would
 * spend the server on tasks; paced, a router's next task takes every signal stored since its last, whatever the
 * feed's rate. Only the rate is bounded: a bound on slots would let idle sticky polls hold every slot while a new
 * router's first task waits on the normal queue.
 */
import type { CustomSlotSupplier, SlotPermit, WorkflowSlotInfo } from '@temporalio/worker';

/** Router tasks a worker begins a second, at most (WATCHER_ROUTER_TASKS_PER_SECOND). */
export const DEFAULT_ROUTER_TASKS_PER_SECOND = 20;

export function pacedRouterSlots(
  perSecond: number,
  now: () => number = Date.now,
): CustomSlotSupplier<WorkflowSlotInfo> {
  let tokens = perSecond;
  let refilledAt = now();
  const waiting: Array<() => void> = [];
  let timer: NodeJS.Timeout | undefined;

  const take = (): boolean => {
    const at = now();
    tokens = Math.min(perSecond, tokens + ((at - refilledAt) / 1000) * perSecond);
    refilledAt = at;
    if (tokens < 1) return false;
    tokens -= 1;
    return true;
  };
  // Grants waiters, oldest first, while tokens last; wakes again when the next token is due.
  const grant = (): void => {
    while (waiting.length > 0 && take()) waiting.shift()!();
    if (waiting.length > 0 && !timer) {
      timer = setTimeout(
        () => {
          timer = undefined;
          grant();
        },
        Math.max(1, Math.ceil(((1 - tokens) / perSecond) * 1000)),
      );
    }
  };

  return {
    type: 'custom',
    reserveSlot(_ctx, abortSignal): Promise<SlotPermit> {
      if (abortSignal.aborted) return Promise.reject(abortSignal.reason);
      if (waiting.length === 0 && take()) return Promise.resolve({});
      return new Promise<SlotPermit>((resolve, reject) => {
        const granted = () => {
          abortSignal.removeEventListener('abort', onAbort);
          resolve({});
        };
        const onAbort = () => {
          const at = waiting.indexOf(granted);
          if (at >= 0) waiting.splice(at, 1);
          reject(abortSignal.reason);
        };
        abortSignal.addEventListener('abort', onAbort, { once: true });
        waiting.push(granted);
        grant();
      });
    },
    tryReserveSlot: () => (waiting.length === 0 && take() ? {} : null),
    markSlotUsed: () => undefined,
    releaseSlot: () => undefined,
  };
}
