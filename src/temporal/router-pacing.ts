/**
 * The routers' workflow task slots (DESIGN 3.2): at most `slots` tasks at once and `perSecond` begun a second. On the
 * server a workflow task costs about ten signals, so a router worker that took one task per signal would spend the
 * server on tasks; paced, a router's next task takes every signal stored since its last, whatever the feed's rate.
 */
import type { CustomSlotSupplier, SlotPermit, WorkflowSlotInfo } from '@temporalio/worker';

export interface RouterPacing {
  /** Router tasks at once, the worker's two long polls included (WATCHER_ROUTER_TASK_SLOTS): at least 3. */
  slots: number;
  /** Router tasks begun a second, at most (WATCHER_ROUTER_TASKS_PER_SECOND); a second's worth may start at once. */
  perSecond: number;
}

export const DEFAULT_ROUTER_PACING: RouterPacing = { slots: 4, perSecond: 20 };

const aborted = () =>
  Object.assign(new Error('the worker no longer needs this router task slot'), { name: 'AbortError' });

export function pacedRouterSlots(
  { slots, perSecond }: RouterPacing,
  now: () => number = Date.now,
): CustomSlotSupplier<WorkflowSlotInfo> {
  let tokens = perSecond;
  let refilledAt = now();
  let used = 0;
  const waiting: Array<() => void> = [];
  let timer: NodeJS.Timeout | undefined;

  const take = (): boolean => {
    const at = now();
    tokens = Math.min(perSecond, tokens + ((at - refilledAt) / 1000) * perSecond);
    refilledAt = at;
    if (used >= slots || tokens < 1) return false;
    tokens -= 1;
    used += 1;
    return true;
  };
  // Grants waiters while slots and tokens allow; wakes again when the next token is due.
  const grant = (): void => {
    while (waiting.length > 0 && take()) waiting.shift()!();
    if (waiting.length > 0 && used < slots && !timer) {
      timer = setTimeout(
        () => {
          timer = undefined;
          grant();
        },
        Math.ceil(((1 - tokens) / perSecond) * 1000),
      );
    }
  };

  return {
    type: 'custom',
    reserveSlot(_ctx, abortSignal): Promise<SlotPermit> {
      if (waiting.length === 0 && take()) return Promise.resolve({});
      return new Promise<SlotPermit>((resolve, reject) => {
        const granted = () => {
          abortSignal.removeEventListener('abort', onAbort);
          resolve({});
        };
        const onAbort = () => {
          const at = waiting.indexOf(granted);
          if (at >= 0) waiting.splice(at, 1);
          reject(aborted());
        };
        if (abortSignal.aborted) return reject(aborted());
        abortSignal.addEventListener('abort', onAbort, { once: true });
        waiting.push(granted);
        grant();
      });
    },
    tryReserveSlot: () => (waiting.length === 0 && take() ? {} : null),
    markSlotUsed: () => undefined,
    releaseSlot: () => {
      used -= 1;
      grant();
    },
  };
}
