/**
 * ApplicationFailure type names that workflows, activities and the bridge agree on. Strings only: each side builds
 * or matches its failures with them, so nobody imports another's runtime code for a name.
 */

/** A string that is not an ISO 8601 duration (core/duration.ts). */
export const INVALID_DURATION = 'InvalidDuration';

/** An expectation input the workflow cannot run with (its dueAt, or dueAt plus grace or offset, is no instant). */
export const INVALID_EXPECTATION = 'InvalidExpectation';

/** A fact sent to the fact router of another key. */
export const WRONG_FACT_KEY = 'WrongFactKey';

/** A delivery the agent refused with a 4xx: not retried, recorded as failed. */
export const LAPSE_REJECTED = 'LapseDeliveryRejected';

/** A resend names no lapse of the expectation (by its delivery's messageId): the update is rejected. */
export const LAPSE_NOT_FOUND = 'LapseNotFound';

/** A resend of a lapse whose expectation has ended (satisfied, withdrawn, closing): no lapse task goes out any more. */
export const EXPECTATION_ENDED = 'ExpectationEnded';
