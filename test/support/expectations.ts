/**
 * Expectations the tests (and the benchmark) raise, the artifact update that carries them to the bridge, and the
 * input the bridge would hand the expectation workflow for one.
 */
import type { Expectation, Origin } from '../../core/types.js';
import { expectationLinks } from '../../core/ids.js';
import { EXTENSION_URI } from '../../core/schemas/extension.js';
import type { AgentRef, ExpectationInput, ExpectationSettings } from '../../workflows/messages.js';
import { unique } from './ids.js';

/** The v1.0 push body of an artifact update carrying `payload` under metadata[URI]. */
export function artifactUpdate(payload: unknown, taskId = `task-${unique()}`, contextId = `ctx-${unique()}`) {
  return {
    artifactUpdate: {
      taskId,
      contextId,
      artifact: { artifactId: `a-${unique()}`, parts: [{ text: 'plan' }], metadata: { [EXTENSION_URI]: payload } },
    },
  };
}

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

/** The instant `ms` from now in whole seconds, written without milliseconds (`2026-06-01T12:00:05Z`). */
export function wholeSecondsFromNow(ms: number): string {
  const due = new Date(Date.now() + ms);
  due.setUTCMilliseconds(0);
  return due.toISOString().replace('.000Z', 'Z');
}

/** A `delivery` expectation `id` on shipment `shipmentId` (fact key `shipment/<shipmentId>/delivered`), due at `dueAt`. */
export function shipmentDelivery(
  id: string,
  shipmentId: string,
  dueAt: string,
  extra: Partial<Expectation> = {},
): Expectation {
  const satisfiedBy = { factKey: `shipment/${shipmentId}/delivered` };
  return deliveryExpectation(id, dueAt, { subject: { type: 'shipment', id: shipmentId }, satisfiedBy, ...extra });
}

/** A `delivery` expectation on shipment S-1 (a fact key of its own), due 2026-12-01: for the planner's fixed clock. */
export function plannedExpectation(id: string, overrides: Partial<Expectation> = {}): Expectation {
  const satisfiedBy = { factKey: `shipment/S-1/delivered/${id}` };
  return shipmentDelivery(id, 'S-1', '2026-12-01T00:00:00Z', {
    expects: 'S-1 is delivered',
    satisfiedBy,
    ...overrides,
  });
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
