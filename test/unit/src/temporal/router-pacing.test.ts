import { describe, expect, it } from 'vitest';
import type { SlotReserveContext } from '@temporalio/worker';
import { pacedRouterSlots } from '../../../../src/temporal/router-pacing.js';

const ctx = {} as SlotReserveContext;
const released = { slotInfo: { type: 'workflow', workflowType: 'factRouterWorkflow', isSticky: false } } as never;

/** A paced supplier on a clock the test moves, and the reservations it granted so far. */
function paced(slots: number, perSecond: number) {
  let nowMs = 0;
  const supplier = pacedRouterSlots({ slots, perSecond }, () => nowMs);
  const granted: number[] = [];
  const reserve = (abort = new AbortController()) => {
    const permit = supplier.reserveSlot(ctx, abort.signal).then(() => void granted.push(nowMs));
    return { permit, abort };
  };
  return { supplier, granted, reserve, advance: (ms: number) => (nowMs += ms) };
}

const settle = () => new Promise((resolve) => setImmediate(resolve));

describe('the paced slots of the routers’ worker', () => {
  it('grants up to its slots at once while a second’s worth of tasks is in hand', async () => {
    const { granted, reserve } = paced(3, 20);
    for (let i = 0; i < 4; i++) reserve();
    await settle();
    expect(granted).toHaveLength(3);
  });

  it('begins no more than its rate a second, however fast slots are released', async () => {
    const { supplier, granted, reserve, advance } = paced(4, 5);
    for (let i = 0; i < 12; i++) reserve();
    await settle();
    // Four slots at once out of the five tokens in hand; each release then waits for a token.
    expect(granted).toHaveLength(4);
    for (let i = 0; i < 4; i++) supplier.releaseSlot(released);
    await settle();
    expect(granted).toHaveLength(5);
    advance(1_000);
    await new Promise((resolve) => setTimeout(resolve, 250));
    expect(granted.length).toBeLessThanOrEqual(8);
    expect(granted.length).toBeGreaterThan(5);
  });

  it('refuses an eager slot when none is free, and gives one when one is', () => {
    const { supplier } = paced(1, 10);
    expect(supplier.tryReserveSlot(ctx)).not.toBeNull();
    expect(supplier.tryReserveSlot(ctx)).toBeNull();
    supplier.releaseSlot(released);
    expect(supplier.tryReserveSlot(ctx)).not.toBeNull();
  });

  it('rejects an aborted reservation with an AbortError, and gives its turn to the next one', async () => {
    const { supplier, granted, reserve } = paced(1, 100);
    reserve();
    await settle();
    const waiting = reserve();
    const next = reserve();
    waiting.abort.abort();
    await expect(waiting.permit).rejects.toMatchObject({ name: 'AbortError' });
    supplier.releaseSlot(released);
    await next.permit;
    expect(granted).toHaveLength(2);
  });
});
