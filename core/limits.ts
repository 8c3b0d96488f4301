/**
 * Every bound the watcher keeps: on what one request may carry, checked by the bridge before any Temporal
 * call (src/service/limits.ts), and on what a workflow accumulates, kept by the workflows themselves. They are chosen
 * so that no workflow's input, carried state (continue-as-new) or result can come near Temporal's 2 MB limit on one
 * payload (`limit.blobSize.error`; past it the server terminates the workflow). docs/api.md repeats the table.
 *
 * The arithmetic, worst case. A length is in UTF-16 code units (JavaScript's `length`). Temporal's JSON payload
 * converter spends at most 6 bytes on one (a control character becomes `\u001f`; `"` and `\` take 2, other BMP
 * characters up to 3, a surrogate pair 4 for its two units), so a field of length n costs at most 6n bytes.
 * Instants and durations are ASCII by their format (1 byte each). A principal id is at most 64 printable ASCII
 * characters (src/auth/principals.ts): 128 bytes. A workflow id is at most 255 UTF-8 bytes (core/ids.ts
 * hashes longer ones): 1,530 bytes. Keys and punctuation are rounded up.
 *
 * - Subject: 128 × 6 + 256 × 6 + 20 = 2.3 KB. Fact as recorded: factKey 1,536 + observedAt 64 + source 128 +
 *   claimedSource 768 + subject 2,324 + keys ≈ 4.9 KB. Subject fact (what a subject ledger forwards): 1.7 KB.
 * - Expectation: id 1,536, kind 768, subject 2,324, expects 12,000, factKey 1,536, dueAt, grace, horizon 192,
 *   anchor 1,600, after 32 × 1,537 = 49,184, basis 384, supersedes 1,536, keys ≈ 71.3 KB.
 * - Lapse: id, kind, subject, expects, instants ≈ 17 KB, and for a skipped one up to MAX_SATISFIED_AFTER = 32
 *   satisfiedAfter ids (49.2 KB) ≈ 66 KB; with its delivery (an error of at most 1,000 characters, written by the
 *   delivery activity, warnings, resentBy, a lapse task id of at most 256) ≈ 76 KB. An expectation raises at most one
 *   lapse per (lapse, dueAt), and its dueAt takes at most two values (as raised, then anchored once): at most 5
 *   lapses, 2 of them skipped.
 * - Record: expectation 71.3 + satisfiedBy 4.9 + latest lapse 66 + 5 lapses (2 × 76 + 3 × 27) 233 + withdrawnReason
 *   6 (1,000 characters) + origin 3.1 + ids and instants ≈ 390 KB: the result of a closed expectation.
 * - Expectation input: expectation 71.3 + links (self, ledgers, anchor, supersedes 5 × 1,530, after 32 × 3,068) 105.9
 *   + origin 3.1 + early fact 4.9 ≈ 187 KB. Continue-as-new: input 182 + record 390 + dependents 100 × 1,531 = 153
 *   ≈ 727 KB.
 * - Fact ledger carried: latest fact 4.9 + dedupe window 1,000 × (24 + 1 + 128 + 3) = 156 + subscribers 100 × 1,531
 *   = 153 + outbox (one pending fact per subscriber) 100 × (1,530 + 4,900 + 30) = 646 ≈ 962 KB.
 * - Subject ledger carried: subject 2.3 + subscribers 153 + outbox 100 × (1,530 + 1,670 + 30) = 323 ≈ 479 KB.
 * - One request: at most 100 expectations, 100 facts and 100 withdraw ids (within the 1 MiB body), and at most 500
 *   distinct expectation ids to look up (each id, `after`, anchor, supersedes, withdraw): a bounded fan-out of
 *   Temporal calls per request, before the per-principal quotas (src/service/quotas.ts) bound it per minute.
 *
 * So the largest is a fact ledger at under 1 MB, half the limit, with every field at its bound and full of control
 * characters; real ids and keys are ASCII and cost a sixth of that.
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

/**
 * Expectations one fact key's router forwards to (open expectations waiting on one fact key). The bridge refuses a
 * raise past it (422, rule `fact-key-subscribers`); a router that is asked anyway withdraws the newcomer.
 */
export const MAX_KEY_SUBSCRIBERS = 100;

/**
 * Early facts one fact router keeps for keys nobody waits on yet (core/fact-shards.ts: FACT_ROUTER_SHARDS routers):
 * past it the oldest go first, so that what continue-as-new carries stays far below Temporal's 2 MB payload limit.
 */
export const MAX_RETAINED_FACTS_PER_ROUTER = 1_000;

/**
 * What one fact router may carry over continue-as-new, in UTF-8 bytes: half of Temporal's 2 MB payload limit. Past it
 * the router forgets unawaited keys, then shrinks dedupe windows, and refuses newcomers while that is not enough.
 */
export const MAX_ROUTER_CARRIED_BYTES = 1_000_000;

/** From this many waiting expectations a key is listed in its router's memo, which the bridge reads before a raise. */
export const ROUTER_CROWDED_KEY = 20;

/**
 * Subjects one router remembers the latest facts of across continue-as-new (about 400 bytes each, within
 * MAX_ROUTER_CARRIED_BYTES beside its keys): past it the least recently heard go, and a stall read that would need one
 * of them does not lapse (it cannot tell). With FACT_ROUTER_SHARDS routers: 64,000 subjects heard of lately.
 */
export const MAX_SUBJECTS_PER_ROUTER = 1_000;

/**
 * Events after which a router continues as new, whatever the server suggests: a router evicted from a worker's cache
 * replays at most this many, and a history read before a lapse decodes at most this many.
 */
export const ROUTER_EVENT_BUDGET = 2_000;

/**
 * The places on one fact key or one subject that a single agent may take: half of what the bridge lets fill (the
 * bound less RACE_ROOM), so that no agent can squat a key or a subject for everyone else (422, rules
 * `fact-key-share`, `subject-share`).
 */
export const MAX_AGENT_SHARE = 45;

/** Expectations anchored on one expectation, which it notifies when it is satisfied or superseded. */
export const MAX_DEPENDENTS = 100;

/**
 * The most later expectations a skipped lapse names in `satisfiedAfter` (as many as one expectation may come after):
 * those satisfied in the same settle interval, the first ones first.
 */
export const MAX_SATISFIED_AFTER = 32;

/**
 * Places of a ledger's (or an anchor's) bound the bridge leaves free: it refuses a raise that would take one of the
 * last 10, which are left for raises that race each other to them and for supersedes (the superseded expectation
 * leaves its ledgers only when it closes, after its successor has joined them).
 */
export const RACE_ROOM = 10;

/** How many (observedAt, source) pairs a fact ledger remembers to recognise re-deliveries. */
export const DEDUPE_WINDOW = 1_000;
