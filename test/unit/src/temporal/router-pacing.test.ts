import { describe, expect, it } from 'vitest';
import type { SlotMarkUsedContext, SlotReserveContext, WorkflowSlotInfo } from '@temporalio/worker';
import { pacedRouterSlots, ROUTER_TASKS_IN_FLIGHT } from '../../../../src/temporal/router-pacing.js';

const ctx = {} as SlotReserveContext;

/** A paced supplier on a clock the test moves, and when each reservation was granted. */
function paced(perSecond: number, inFlight?: number) {
  let nowMs = 0;
  const supplier = pacedRouterSlots(perSecond, () => nowMs, inFlight);
  const granted: number[] = [];
  const reserve = (abort = new AbortController()) => {
    const permit = supplier.reserveSlot(ctx, abort.signal).then(() => void granted.push(nowMs));
    return { permit, abort };
  };
  return { supplier, granted, reserve, advance: (ms: number) => (nowMs += ms) };
}

const settle = () => new Promise((resolve) => setImmediate(resolve));
const realTime = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('the paced slots of the routers’ worker', () => {
  it('grants a second’s worth of tasks at once', async () => {
    const { granted, reserve } = paced(5);
    for (let i = 0; i < 7; i++) reserve();
    await settle();
    expect(granted).toHaveLength(5);
  });

  it('then begins no more than its rate a second, oldest reservation first', async () => {
    const { granted, reserve, advance } = paced(5);
    const order: number[] = [];
    for (let i = 0; i < 8; i++) void reserve().permit.then(() => order.push(i));
    await settle();
    expect(granted).toHaveLength(5);
    advance(400);
    await realTime(250);
    expect(granted).toHaveLength(7);
    expect(order).toEqual([0, 1, 2, 3, 4, 5, 6]);
  });

  it('gives an eager slot only when a token is in hand and nobody waits', async () => {
    const { supplier, reserve } = paced(1);
    expect(supplier.tryReserveSlot(ctx)).not.toBeNull();
    expect(supplier.tryReserveSlot(ctx)).toBeNull();
    reserve();
    expect(supplier.tryReserveSlot(ctx)).toBeNull();
  });

  it('rejects an aborted reservation with its abort reason, and gives its turn to the next one', async () => {
    const { granted, reserve, advance } = paced(1);
    reserve();
    await settle();
    const waiting = reserve();
    const next = reserve();
    waiting.abort.abort();
    await expect(waiting.permit).rejects.toMatchObject({ name: 'AbortError' });
    advance(1_000);
    await realTime(1_100);
    await next.permit;
    expect(granted).toEqual([0, 1_000]);
  });

  it(`works on at most ${ROUTER_TASKS_IN_FLIGHT} tasks at once: a poll that brought none, or a task done, lets the next go`, async () => {
    const { supplier, granted, reserve } = paced(100);
    const task = { permit: {}, slotInfo: { type: 'workflow' } } as SlotMarkUsedContext<WorkflowSlotInfo>;
    for (let i = 0; i < ROUTER_TASKS_IN_FLIGHT + 2; i++) reserve();
    await settle();
    // Reservations waiting on a poll hold no room: every one is granted while no task is in hand.
    expect(granted).toHaveLength(ROUTER_TASKS_IN_FLIGHT + 2);
    for (let i = 0; i < ROUTER_TASKS_IN_FLIGHT; i++) supplier.markSlotUsed(task);
    reserve();
    await settle();
    expect(granted).toHaveLength(ROUTER_TASKS_IN_FLIGHT + 2);
    expect(supplier.tryReserveSlot(ctx)).toBeNull();

    supplier.releaseSlot({ permit: {} });
    await settle();
    expect(granted).toHaveLength(ROUTER_TASKS_IN_FLIGHT + 2);
    supplier.releaseSlot(task);
    await settle();
    expect(granted).toHaveLength(ROUTER_TASKS_IN_FLIGHT + 3);
  });
});
