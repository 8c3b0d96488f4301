/**
 * The routers' workflow task slots (DESIGN 3.2): at most `perSecond` router tasks begun a second, a second's worth at
 * once, and at most `inFlight` being worked on. On the server a workflow task costs about ten signals, so a router
 * worker that took one task per signal would spend the server on tasks; paced, a router's next task takes every signal
 * stored since its last, whatever the feed's rate. A router that is not in the cache replays its run first (at 100,000
 * open about 1.5 s of CPU: a start carrying 1,000 keys and some 500 signals), and the routers share one workflow
 * thread, so after a restart all 64 replayed at once, none within the workflow task timeout, and every retry did the
 * same again (12-07: tasks of 200 s at their eighth attempt). Only tasks in hand count against `inFlight`, not
 * reservations waiting on a poll: a bound on those would let idle sticky polls hold every slot while a new router's
 * first task waits on the normal queue. A poll already out may still bring one task more each.
 */
import type { CustomSlotSupplier, SlotPermit, WorkflowSlotInfo } from '@temporalio/worker';

/** Router tasks a worker begins a second, at most (WATCHER_ROUTER_TASKS_PER_SECOND). */
export const DEFAULT_ROUTER_TASKS_PER_SECOND = 20;

/** Router tasks a worker works on at once before it polls for more. */
export const ROUTER_TASKS_IN_FLIGHT = 2;

/** The routers' forwards (a local activity each, workflows/fact-router.ts) a worker sends at once. */
export const ROUTER_FORWARDS_AT_ONCE = 4;

export function pacedRouterSlots(
  perSecond: number,
  now: () => number = Date.now,
  inFlight = ROUTER_TASKS_IN_FLIGHT,
): CustomSlotSupplier<WorkflowSlotInfo> {
  let tokens = perSecond;
  let refilledAt = now();
  let used = 0;
  const waiting: Array<() => void> = [];
  let timer: NodeJS.Timeout | undefined;

  const take = (): boolean => {
    if (used >= inFlight) return false;
    const at = now();
    tokens = Math.min(perSecond, tokens + ((at - refilledAt) / 1000) * perSecond);
    refilledAt = at;
    if (tokens < 1) return false;
    tokens -= 1;
    return true;
  };
  // Grants waiters, oldest first, while tokens and room last; wakes again when the next token is due (a slot set
  // free grants again at once).
  const grant = (): void => {
    while (waiting.length > 0 && take()) waiting.shift()!();
    if (waiting.length > 0 && used < inFlight && !timer) {
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
    markSlotUsed: () => {
      used++;
    },
    releaseSlot: ({ slotInfo }) => {
      if (slotInfo === undefined) return;
      used--;
      grant();
    },
  };
}
