/**
 * The one place tests (and the benchmark) build the watcher's values: expectations (and the input the bridge starts
 * one with, and the artifact update that carries them to it), facts,
 * and agent cards, as an agent serves them (`cardJson`) and as the watcher reads them (`cardInfo`).
 */
import type { AgentCardInfo } from '../../activities/agent-card/card.js';
import { expectationLinks } from '../../core/ids.js';
import { EXTENSION_URI } from '../../core/schemas/extension.js';
import type { Expectation, Fact, Origin } from '../../core/types.js';
import type { AgentRef, ExpectationInput, ExpectationSettings, SubjectFact } from '../../workflows/messages.js';
import { unique } from './ids.js';

// Expectations.

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

/** An expectation of kind `delivery`, due in a year (it never lapses during a test). */
export function expectation(id: string, overrides: Partial<Expectation> = {}): Expectation {
  const dueAt = wholeSecondsFromNow(365 * 24 * 3600 * 1000);
  return deliveryExpectation(id, dueAt, { expects: 'The shipment is delivered to the consignee', ...overrides });
}

/** A `delivery` expectation on `shipment` (the test agent's default kind), due at `dueAt` with no grace. */
export function dueExpectation(id: string, dueAt: Date, overrides: Partial<Expectation> = {}): Expectation {
  const due = new Date(dueAt);
  due.setUTCMilliseconds(0);
  return deliveryExpectation(id, due.toISOString(), { grace: 'PT0S', ...overrides });
}

/** A `delivery` expectation on shipment `S-<id>`, due `dueInMs` after `nowMs`. */
export function shipmentExpectation(
  id: string,
  nowMs: number,
  dueInMs: number,
  extra: Partial<Expectation> = {},
): Expectation {
  const dueAt = new Date(nowMs + dueInMs).toISOString();
  return deliveryExpectation(id, dueAt, { expects: 'the shipment is delivered', ...extra });
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

// Facts.

/** A fact on `factKey` from `feed`, observed at 2026-12-01T00:00:00Z unless `extra` says otherwise. */
export function fact(factKey: string, extra: Partial<Fact> = {}): Fact {
  return { factKey, observedAt: '2026-12-01T00:00:00Z', source: 'feed', ...extra };
}

/** A fact on a subject as a router holds it: observed and received at the instants given (ms). */
export function subjectFact(
  subject: SubjectFact['subject'],
  factKey: string,
  observedAtMs: number,
  receivedAtMs: number,
): SubjectFact {
  return {
    subject,
    factKey,
    observedAt: new Date(observedAtMs).toISOString(),
    receivedAt: new Date(receivedAtMs).toISOString(),
  };
}

// Agent cards.

/** The kinds the test cards declare: `delivery` (contract) and `pickup` (observed), both on shipments. */
export const cardKinds = [
  { kind: 'delivery', subjectType: 'shipment', basis: 'contract', describes: 'The shipment is delivered' },
  { kind: 'pickup', subjectType: 'shipment', basis: 'observed', describes: 'The carrier picks the shipment up' },
];

/** The extension's params on a card that keeps no clock, declaring `kinds`, its lapseSkill handle-lapse. */
export function declaration(kinds: readonly object[] = cardKinds) {
  return { keepsTime: false, lapseSkill: 'handle-lapse', kinds };
}

/** A v1.0 card (the SDK's JSON shape) declaring the extension with `delivery` and `pickup` kinds. */
export function cardJson(overrides: { params?: unknown; skills?: string[]; declare?: boolean } = {}) {
  const params = overrides.params ?? declaration();
  return {
    name: 'Card of a test agent',
    description: 'Keeps no clock.',
    supportedInterfaces: [
      { url: 'http://127.0.0.1:1/a2a', protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '1.0' },
    ],
    version: '1.0.0',
    capabilities: {
      extensions: overrides.declare === false ? [] : [{ uri: EXTENSION_URI, description: '', required: false, params }],
    },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: (overrides.skills ?? ['handle-lapse']).map((id) => ({
      id,
      name: id,
      description: '',
      tags: [],
      examples: [],
    })),
    signatures: [],
  };
}

/** A v1.0 card as the watcher reads it: the extension declared with `params` at index 0, with these skills. */
export function cardInfo(params: unknown = declaration(), skillIds = ['handle-lapse']): AgentCardInfo {
  return {
    version: '1.0',
    skillIds,
    declaration: { index: 0, params },
    securitySchemes: {},
    securityRequirements: [],
  };
}
