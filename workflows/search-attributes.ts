/**
 * The search attributes of DESIGN 6, defined once for workflows (upserts) and clients (start, list, registration).
 */
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

export const ExpectationKind = defineSearchAttributeKey('ExpectationKind', SearchAttributeType.KEYWORD);
/** `type/id` of the subject, the type with `%` and `/` percent-encoded (core/ids.ts `subjectKey`). */
export const ExpectationSubject = defineSearchAttributeKey('ExpectationSubject', SearchAttributeType.KEYWORD);
export const ExpectationState = defineSearchAttributeKey('ExpectationState', SearchAttributeType.KEYWORD);
export const ExpectationAgent = defineSearchAttributeKey('ExpectationAgent', SearchAttributeType.KEYWORD);
export const ExpectationFactKey = defineSearchAttributeKey('ExpectationFactKey', SearchAttributeType.KEYWORD);
/** The current dueAt. */
export const ExpectationDueAt = defineSearchAttributeKey('ExpectationDueAt', SearchAttributeType.DATETIME);
/** The record's `late`, set when the expectation is satisfied (absent until then, and on those satisfied before it). */
export const ExpectationLate = defineSearchAttributeKey('ExpectationLate', SearchAttributeType.BOOL);

export const allSearchAttributes = [
  ExpectationKind,
  ExpectationSubject,
  ExpectationState,
  ExpectationAgent,
  ExpectationFactKey,
  ExpectationDueAt,
  ExpectationLate,
] as const;
