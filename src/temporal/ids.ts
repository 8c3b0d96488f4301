/**
 * Workflow ids, built here and nowhere else (DESIGN 2). Ids are business keys an operator can type into the UI.
 */
import { createHash } from 'node:crypto';
import type { Subject } from '../schemas/extension.js';

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
