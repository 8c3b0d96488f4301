/**
 * What an expectation owes the workflows it is tied to (DESIGN 3.3–3.5): its dependents when it is satisfied or
 * superseded, the expectations it comes after when it is satisfied, a dependent past its bound, its key's router when it
 * ends. Pure, so each message is unit-tested without a server; ExpectationLinks (expectation-links.ts) sends them.
 */
import { MAX_DEPENDENTS } from '../core/limits.js';
import type { ExpectationRecord } from '../core/types.js';
import type {
  AnchorMoved,
  AnchorSatisfied,
  ExpectationLinks,
  Skipped,
  Unsubscribe,
  WithdrawRequest,
} from './messages.js';

/** One signal, named by its field. */
export type Message =
  | { anchorSatisfied: AnchorSatisfied }
  | { anchorMoved: AnchorMoved }
  | { skipped: Skipped }
  | { withdraw: WithdrawRequest }
  | { unsubscribe: Unsubscribe };

/** A signal owed to the workflow `to`. */
export type Owed = Message & { to: string };

/** The record and ties an expectation's messages are drawn from. */
export interface Ties {
  record: ExpectationRecord;
  links: ExpectationLinks;
  dependents: Iterable<string>;
  /** Workflow id of the expectation that superseded this one, if any. */
  supersededBy?: string;
}

/** What the dependents of an ended expectation follow: its satisfaction, or the expectation that superseded it. */
function toDependents({ record, supersededBy }: Ties): Message | undefined {
  if (record.state === 'satisfied' && record.observedAt) {
    return {
      anchorSatisfied: { anchorExpectationId: record.expectation.expectationId, observedAt: record.observedAt },
    };
  }
  if (record.state === 'withdrawn' && record.supersededBy && supersededBy) {
    return { anchorMoved: { expectationId: record.supersededBy, workflowId: supersededBy } };
  }
  return undefined;
}

/**
 * What a registering dependent is told: a withdrawal when it would pass MAX_DEPENDENTS (`full`), else what the
 * dependents of an ended anchor follow, at once; nothing while the anchor is open.
 */
export function owedToNewDependent(ties: Ties, workflowId: string, full: boolean): Owed | undefined {
  if (full) {
    const self = ties.record.expectation.expectationId;
    const reason = `not anchored: expectation ${JSON.stringify(self)} already has ${MAX_DEPENDENTS} dependents, its bound; withdrawn, as its due time would never follow the anchor`;
    return { to: workflowId, withdraw: { reason } };
  }
  const message = toDependents(ties);
  return message && { to: workflowId, ...message };
}

/**
 * What an ending expectation tells, in order: a satisfied one its dependents (anchor satisfied) and the expectations
 * it comes after (skipped), a superseded one its dependents (anchor moved), and its key's router, unless that router
 * dropped it already, to drop it.
 */
export function owedOnClose(ties: Ties, routerDroppedIt: boolean): Owed[] {
  const { record, links } = ties;
  const owed: Owed[] = [];
  const message = toDependents(ties);
  if (message && 'anchorSatisfied' in message) {
    for (const dependent of ties.dependents) owed.push({ to: dependent, ...message });
    const receivedAt = record.satisfiedBy?.receivedAt;
    const skipped = { satisfiedExpectationId: record.expectation.expectationId, ...(receivedAt ? { receivedAt } : {}) };
    for (const target of Object.values(links.after)) owed.push({ to: target, skipped });
  } else if (message) {
    for (const dependent of ties.dependents) owed.push({ to: dependent, ...message });
  }
  if (!routerDroppedIt) owed.push({ to: links.factRouter, unsubscribe: { workflowId: links.self } });
  return owed;
}
