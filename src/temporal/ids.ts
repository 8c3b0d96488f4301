/**
 * Workflow ids, built here and nowhere else (DESIGN 2). Ids are business keys an operator can type into the UI.
 */
import { createHash } from 'node:crypto';
import type { Subject } from '../schemas/extension.js';
import type { ExpectationLinks } from '../../workflows/messages.js';

const MAX_ID_BYTES = 512;

/** Keeps an id under 512 bytes: a longer one becomes `<prefix>:sha256:<hex of the whole original>`. */
function bounded(prefix: string, id: string): string {
  if (Buffer.byteLength(id, 'utf8') <= MAX_ID_BYTES) return id;
  return `${prefix}:sha256:${createHash('sha256').update(id, 'utf8').digest('hex')}`;
}

export const expectationWorkflowId = (expectationId: string): string =>
  bounded('expectation', `expectation:${expectationId}`);

export const factLedgerWorkflowId = (factKey: string): string => bounded('fact', `fact:${factKey}`);

export const subjectLedgerWorkflowId = (subject: Subject): string =>
  bounded('subject', `subject:${encodeURIComponent(subject.type)}:${encodeURIComponent(subject.id)}`);

/** The value of the `ExpectationSubject` search attribute. */
export const subjectKey = (subject: Subject): string => `${subject.type}/${subject.id}`;

/** Every workflow id an expectation talks to. */
export function expectationLinks(expectation: {
  expectationId: string;
  subject: Subject;
  satisfiedBy: { factKey: string };
  after?: string[];
  anchor?: { expectationId: string };
  supersedes?: string;
}): ExpectationLinks {
  return {
    self: expectationWorkflowId(expectation.expectationId),
    factLedger: factLedgerWorkflowId(expectation.satisfiedBy.factKey),
    subjectLedger: subjectLedgerWorkflowId(expectation.subject),
    after: Object.fromEntries((expectation.after ?? []).map((id) => [id, expectationWorkflowId(id)])),
    anchor: expectation.anchor ? expectationWorkflowId(expectation.anchor.expectationId) : undefined,
    supersedes: expectation.supersedes ? expectationWorkflowId(expectation.supersedes) : undefined,
  };
}
