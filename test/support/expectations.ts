/**
 * Expectations the tests raise, and the input the bridge would hand the expectation workflow for one.
 */
import type { Expectation, Origin } from '../../core/types.js';
import { expectationLinks } from '../../core/ids.js';
import type { AgentRef, ExpectationInput, ExpectationSettings } from '../../workflows/messages.js';

/** A `delivery` expectation on shipment `S-<id>` (the test agent's default kind), due at `dueAt`. */
export function deliveryExpectation(id: string, dueAt: string, extra: Partial<Expectation> = {}): Expectation {
  return {
    expectationId: id,
    kind: 'delivery',
    subject: { type: 'shipment', id: `S-${id}` },
    expects: 'The shipment is delivered',
    satisfiedBy: { factKey: `shipment/${id}/delivered` },
    dueAt,
    basis: 'contract',
    ...extra,
  };
}

/** The settings the bridge runs with by default (config.ts). */
export const defaultSettings: ExpectationSettings = { lateWindow: 'P30D', factRetention: 'P7D' };

/** What the bridge on `taskQueue` starts an expectation with when `agent` raises it in `origin`: first of its lineage, ids.ts links. */
export function expectationInput(
  expectation: Expectation,
  agent: AgentRef,
  origin: Origin,
  taskQueue: string,
): ExpectationInput {
  return {
    expectation,
    agent,
    origin,
    lineage: 0,
    links: expectationLinks(expectation, taskQueue),
    settings: defaultSettings,
  };
}
