/**
 * What a router keeps of the facts on a subject (DESIGN 3.2): the one observed last and the one received last. Pure,
 * so that the router folds its signals with it and a history read (activities/history-reads.ts) folds them the same.
 */
import type { CarriedSubject, SubjectFact } from './messages.js';

/** One map key per subject, whatever characters its type and id hold. */
export const subjectEntryKey = (subject: { type: string; id: string }): string => `${subject.type}\u0000${subject.id}`;

/** The subject's entry after one more fact on it. */
export function foldSubjectFact(entry: CarriedSubject | undefined, fact: SubjectFact): CarriedSubject {
  if (!entry) return { subject: fact.subject, latest: fact, lastReceived: fact };
  const observedLater = Date.parse(fact.observedAt) > Date.parse(entry.latest.observedAt);
  const receivedLater = Date.parse(fact.receivedAt) >= Date.parse(entry.lastReceived.receivedAt);
  return {
    subject: entry.subject,
    latest: observedLater ? fact : entry.latest,
    lastReceived: receivedLater ? fact : entry.lastReceived,
  };
}
