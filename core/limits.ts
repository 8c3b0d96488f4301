/**
 * Every bound the watcher keeps: on what one request may carry (checked by the bridge before any Temporal call, in
 * src/service/limits.ts) and on what a workflow accumulates. The arithmetic that keeps each payload under half of
 * Temporal's 2 MB limit is in DESIGN 6.1; docs/api.md repeats the table.
 */

/** Longest text of each field, in UTF-16 code units; a longer one is refused (422, rule `max-length`). */
export const MAX_LENGTH = {
  /** expectationId, every `after` id, anchor.expectationId, supersedes, every withdraw id. */
  id: 256,
  /** Also the `ExpectationKind` search attribute, which is not hashed (SQL visibility keeps 255 characters). */
  kind: 128,
  subjectType: 128,
  subjectId: 256,
  /** satisfiedBy.factKey and a fact's factKey. */
  factKey: 256,
  /** What is expected, in a person's words. */
  expects: 2_000,
  basis: 64,
  /** A fact's `source` as reported (kept as `claimedSource`). */
  source: 128,
  /** dueAt, horizon, observedAt: a date-time's fraction of a second may otherwise run on. */
  instant: 64,
  /** grace and anchor.offset: a duration's digits may otherwise run on. */
  duration: 64,
  /** The origin task's id and context id (the A2A object's, or the watcher agent's SendMessage). */
  originId: 256,
  /** A principal's id in the principals file (the `source` of its facts, the `ExpectationAgent` of its raises). */
  principalId: 64,
  /** An error a lapse delivery records (the agent's answer quoted in it). */
  deliveryError: 1_000,
} as const;

/** Longest lists: per request (413, rule `max-items`), per expectation and per card (422, rule `max-items`). */
export const MAX_ITEMS = {
  /** Expectations in one request, wherever in the body they are. */
  expectations: 100,
  /** Facts in one request. */
  facts: 100,
  /** Withdraw ids in one request. */
  withdraw: 100,
  /** Distinct expectation ids one request makes the bridge look up. */
  references: 500,
  /** `after` ids of one expectation. */
  after: 32,
  /** Kinds one card declares (`params.kinds`). */
  kinds: 100,
} as const;

/** Open expectations waiting on one fact key: the bridge refuses a raise past it (422, `fact-key-subscribers`). */
// A router asked past it anyway withdraws the newcomer.
export const MAX_KEY_SUBSCRIBERS = 100;

/** Early facts one fact router keeps for keys nobody waits on yet; past it the oldest go first. */
export const MAX_RETAINED_FACTS_PER_ROUTER = 1_000;

/** What one fact router may carry over continue-as-new, in UTF-8 bytes (DESIGN 6.1 says what it gives up past it). */
export const MAX_ROUTER_CARRIED_BYTES = 1_000_000;

/** From this many waiting expectations a key is listed in its router's memo, which the bridge reads before a raise. */
export const ROUTER_CROWDED_KEY = 20;

/** Subjects one router remembers the latest facts of across continue-as-new; past it the least recently heard go. */
// A stall read that would need a forgotten subject does not lapse: it cannot tell.
export const MAX_SUBJECTS_PER_ROUTER = 1_000;

/** Events after which a router continues as new, which bounds its replays and the history reads before a lapse. */
export const ROUTER_EVENT_BUDGET = 2_000;

/**
 * A router's workflow task timeout (ms), set when it starts and carried over continue-as-new. A router out of the
 * cache replays its run first: at 100,000 open about 1.5 s of CPU, and on a busy two-core machine 7 to 26 s of wall time
 * with two at once (12-07), past the default 10 s, when the retry began the replay again. The price: a worker killed
 * in the middle of a router task leaves that router's next task to wait up to this long; its facts are stored
 * meanwhile and lapses read them (DESIGN 3.3), only the forwards wait.
 */
export const ROUTER_WORKFLOW_TASK_TIMEOUT_MS = 60_000;

/** Places on one fact key a single agent may take (422, rule `fact-key-share`). */
export const MAX_AGENT_SHARE = 45;

/** Expectations anchored on one expectation, which it notifies when it is satisfied or superseded. */
export const MAX_DEPENDENTS = 100;

/** The most expectations a skipped lapse names in `satisfiedAfter`, the first of those satisfied in its interval. */
export const MAX_SATISFIED_AFTER = 32;

/** Places of a router's (or an anchor's) bound the bridge leaves free for racing raises and supersedes (DESIGN 6.1). */
export const RACE_ROOM = 10;

/** How many (observedAt, source) pairs a fact router remembers to recognise re-deliveries. */
export const DEDUPE_WINDOW = 1_000;
