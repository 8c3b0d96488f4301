/**
 * One workflow per expectation (`expectation:<id>`, DESIGN 3): holds the promise until a fact satisfies it, raises
 * overdue, stalled and skipped lapses on the watcher's clock, follows its anchor, and closes when nothing is pending.
 */
import {
  ActivityFailure,
  ApplicationFailure,
  allHandlersFinished,
  condition,
  continueAsNew,
  getExternalWorkflowHandle,
  proxyActivities,
  setCurrentDetails,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
  type SignalDefinition,
} from '@temporalio/workflow';
import type { DeliveryActivities, LedgerActivities } from '../activities/types.js';
import { addDuration } from '../core/duration.js';
import { INVALID_EXPECTATION, LAPSE_REJECTED } from '../core/failures.js';
import { lapseMessageId } from '../core/message-id.js';
import type { ExpectationRecord, Fact, Lapse, LapseEntry, LapseKind } from '../core/types.js';
import { anchoredDueAt, dueChecks, isLate, isOpen, mayClose, maySkip, nextDeadline, type Deadline } from './decisions.js';
import {
  anchorMovedSignal,
  anchorSatisfiedSignal,
  factSignal,
  recordQuery,
  registerDependentSignal,
  skippedSignal,
  subjectFactSignal,
  unsubscribeSignal,
  withdrawSignal,
  withdrawUpdate,
  type ExpectationInput,
  type WithdrawRequest,
} from './messages.js';
import { ExpectationDueAt, ExpectationState } from './search-attributes.js';

const ledgers = proxyActivities<LedgerActivities>({
  startToCloseTimeout: '30s',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '1m' },
});

const delivery = proxyActivities<DeliveryActivities>({
  startToCloseTimeout: '30s',
  scheduleToCloseTimeout: '7 days',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '10m', nonRetryableErrorTypes: [LAPSE_REJECTED] },
});

/** How many superseded anchors a dependent follows in one go before it gives up (beyond any sane lineage). */
const MAX_ANCHOR_HOPS = 100;

const iso = (ms: number): string => new Date(ms).toISOString();
const nowIso = (): string => iso(Date.now());
const normalized = (instant: string): string => iso(Date.parse(instant));

/** The record of a newly raised expectation. */
function initialRecord(input: ExpectationInput): ExpectationRecord {
  const dueMs = Date.parse(input.expectation.dueAt);
  if (Number.isNaN(dueMs)) {
    throw ApplicationFailure.create({ type: INVALID_EXPECTATION, message: 'dueAt is not an instant', nonRetryable: true });
  }
  // The bridge refuses these (src/schemas/extension.ts); a caller that skips it gets a failure, not a RangeError loop.
  const { grace, anchor } = input.expectation;
  for (const [field, duration] of [['grace', grace], ['anchor.offset', anchor?.offset]] as const) {
    if (duration !== undefined && !Number.isFinite(new Date(addDuration(dueMs, duration)).getTime())) {
      throw ApplicationFailure.create({
        type: INVALID_EXPECTATION,
        message: `dueAt plus ${field} (${duration}) is not an instant`,
        nonRetryable: true,
      });
    }
  }
  return {
    expectation: input.expectation,
    projectedDueAt: iso(dueMs),
    dueAt: iso(dueMs),
    state: 'open',
    raisedAt: nowIso(),
    lapses: [],
    lineage: input.lineage,
    agent: { id: input.agent.id },
    origin: input.origin,
  };
}

/** Signals another workflow; a closed or unknown target is not an error (it has nothing left to learn). */
async function signalQuietly<T extends unknown[]>(workflowId: string, signal: SignalDefinition<T>, ...args: T) {
  try {
    await getExternalWorkflowHandle(workflowId).signal(signal, ...args);
  } catch {
    // The target closed: a closed expectation or ledger is not open, so there is nobody to tell.
  }
}

function describeFailure(error: unknown): string {
  if (error instanceof ActivityFailure && error.cause) return error.cause.message;
  return error instanceof Error ? error.message : String(error);
}

/** Markdown for the Temporal UI: state, current due, satisfaction or withdrawal, and one row per lapse. */
function currentDetails(record: ExpectationRecord): string {
  const due = record.dueAt === record.projectedDueAt ? record.dueAt : `${record.dueAt} (projected ${record.projectedDueAt})`;
  const paragraphs = [`**${record.state}** · due ${due}`];
  if (record.satisfiedBy) {
    const late = record.late ? ' (late)' : '';
    const by = `\`${record.satisfiedBy.factKey}\` observed ${record.observedAt}${late}`;
    paragraphs.push(`satisfied at ${record.satisfiedAt} by ${by}`);
  }
  if (record.withdrawnReason) paragraphs.push(`withdrawn: ${record.withdrawnReason}`);
  if (record.lastFactAt) paragraphs.push(`last fact on the subject: ${record.lastFactAt}`);
  if (record.lapses.length > 0) {
    // A list, not a table: the UI shows current details in a narrow frame where table cells wrap and are cut.
    const lines = record.lapses.map(({ lapse, delivery, lapseTaskId }) => {
      const status = delivery.error ? `${delivery.status} (${delivery.error})` : delivery.status;
      const task = lapseTaskId ? ` · task \`${lapseTaskId}\`` : '';
      return `- **${lapse.lapse}** at ${lapse.lapsedAt} (due ${lapse.dueAt}) · ${status}${task}`;
    });
    paragraphs.push(lines.join('\n'));
  }
  return paragraphs.join('\n\n');
}

function deadlineSummary(deadline: Deadline): string {
  const at = iso(deadline.atMs);
  if (deadline.kind === 'overdue') return `overdue check at ${at}`;
  if (deadline.kind === 'stalled') return `stalled check at ${at}`;
  return `late window ends at ${at}`;
}

/** Holds one expectation until it is satisfied, withdrawn, or its late window after the last lapse has passed. */
export async function expectationWorkflow(input: ExpectationInput): Promise<ExpectationRecord> {
  const { expectation, links, settings, agent } = input;
  const record: ExpectationRecord = input.carried?.record ?? initialRecord(input);
  let horizonChecked = input.carried?.horizonChecked ?? false;
  const dependents = new Set(input.carried?.dependents ?? []);
  let anchorLink = input.carried ? input.carried.anchorLink : links.anchor;
  /** Bumped by every change that moves a deadline or the state, so the loop re-decides. */
  let changes = 0;
  let pendingDeliveries = 0;
  let published = input.carried ? { state: record.state, dueAt: record.dueAt } : undefined;
  /** Workflow id of the expectation that superseded this one: its dependents follow it. */
  let supersededByWorkflowId: string | undefined;

  const deadlineInputs = () => ({ record, horizonChecked, lateWindow: settings.lateWindow });

  /** The operator's view: search attributes when state or dueAt moved, and the current details. */
  function publish(): void {
    if (published?.state !== record.state || published.dueAt !== record.dueAt) {
      upsertSearchAttributes([
        { key: ExpectationState, value: record.state },
        { key: ExpectationDueAt, value: new Date(record.dueAt) },
      ]);
      published = { state: record.state, dueAt: record.dueAt };
    }
    setCurrentDetails(currentDetails(record));
  }

  function changed(): void {
    changes++;
    publish();
  }

  /** Exact key match only (DESIGN 3.2); the first matching fact wins, any later one is a no-op. */
  function applyFact(fact: Fact): void {
    if (!isOpen(record.state) || fact.factKey !== expectation.satisfiedBy.factKey) return;
    record.state = 'satisfied';
    record.satisfiedAt = nowIso();
    record.observedAt = normalized(fact.observedAt);
    record.satisfiedBy = fact;
    record.late = isLate(fact.observedAt, record.dueAt);
    changed();
  }

  function applyAnchor(observedAt: string): void {
    if (!isOpen(record.state) || !expectation.anchor) return;
    const dueAt = anchoredDueAt(observedAt, expectation.anchor.offset);
    if (dueAt === record.dueAt) return;
    record.dueAt = dueAt;
    changed();
  }

  /** Registers with the current anchor, following superseded anchors to the one that replaced them. */
  async function linkToAnchor(): Promise<void> {
    for (let hop = 0; anchorLink && hop < MAX_ANCHOR_HOPS && isOpen(record.state); hop++) {
      const link = anchorLink;
      const result = await ledgers.linkAnchor.executeWithOptions({ summary: `link to anchor ${link}` }, [
        { anchorWorkflowId: link, dependentWorkflowId: links.self },
      ]);
      if (result.satisfiedObservedAt) applyAnchor(result.satisfiedObservedAt);
      // A moved signal may have re-linked us meanwhile; only follow our own answer if it is still current.
      if (!result.movedTo || anchorLink !== link) return;
      anchorLink = result.movedTo.workflowId;
    }
  }

  function raiseLapse(kind: LapseKind, satisfiedAfter?: string[]): void {
    const lapse: Lapse = {
      expectationId: expectation.expectationId,
      kind: expectation.kind,
      subject: expectation.subject,
      expects: expectation.expects,
      lapse: kind,
      projectedDueAt: record.projectedDueAt,
      dueAt: record.dueAt,
      lapsedAt: nowIso(),
      ...(record.lastFactAt ? { lastFactAt: record.lastFactAt } : {}),
      ...(satisfiedAfter ? { satisfiedAfter } : {}),
      lineage: record.lineage,
    };
    const entry: LapseEntry = {
      lapse,
      delivery: { status: 'pending', messageId: lapseMessageId(expectation.expectationId, kind, record.dueAt) },
    };
    record.lapses.push(entry);
    record.lapse = lapse;
    delete record.lapseTaskId;
    record.state = 'lapsed';
    pendingDeliveries++;
    void deliver(entry).finally(() => {
      pendingDeliveries--;
      publish();
    });
  }

  /** Delivers one lapse task in the background; the outcome is recorded on its entry, never thrown. */
  async function deliver(entry: LapseEntry): Promise<void> {
    if (!agent.cardUrl) {
      entry.delivery = { ...entry.delivery, status: 'failed', error: `agent ${agent.id} has no cardUrl to deliver to` };
      return;
    }
    try {
      const result = await delivery.deliverLapse.executeWithOptions(
        { summary: `deliver ${entry.lapse.lapse} lapse to ${agent.id}` },
        [{ lapse: entry.lapse, agent, origin: record.origin, messageId: entry.delivery.messageId }],
      );
      entry.delivery = { ...entry.delivery, status: 'delivered', deliveredAt: nowIso(), warnings: result.warnings };
      if (result.taskId) entry.lapseTaskId = result.taskId;
    } catch (error) {
      entry.delivery = { ...entry.delivery, status: 'failed', error: describeFailure(error) };
    }
    if (record.lapses.at(-1) === entry && entry.lapseTaskId) record.lapseTaskId = entry.lapseTaskId;
  }

  setHandler(recordQuery, () => record);

  setHandler(factSignal, applyFact);

  setHandler(subjectFactSignal, (fact) => {
    if (record.lastFactAt === undefined || Date.parse(fact.observedAt) > Date.parse(record.lastFactAt)) {
      record.lastFactAt = normalized(fact.observedAt);
      publish();
    }
  });

  function withdraw(request: WithdrawRequest): 'withdrawn' | 'not-open' {
    if (!isOpen(record.state)) return 'not-open';
    record.state = 'withdrawn';
    record.withdrawnReason = request.reason;
    if (request.supersededBy) {
      record.supersededBy = request.supersededBy.expectationId;
      supersededByWorkflowId = request.supersededBy.workflowId;
    }
    changed();
    return 'withdrawn';
  }

  setHandler(withdrawSignal, (request) => void withdraw(request));
  setHandler(withdrawUpdate, withdraw);

  setHandler(skippedSignal, ({ satisfiedExpectationId }) => {
    if (!maySkip(record)) return;
    raiseLapse('skipped', [satisfiedExpectationId]);
    changed();
  });

  // Only anchors we registered with send this; a superseded anchor is withdrawn and can no longer be satisfied.
  setHandler(anchorSatisfiedSignal, ({ observedAt }) => applyAnchor(observedAt));

  setHandler(anchorMovedSignal, async (moved) => {
    if (!isOpen(record.state) || anchorLink === moved.workflowId) return;
    anchorLink = moved.workflowId;
    await linkToAnchor();
  });

  setHandler(registerDependentSignal, async ({ workflowId }) => {
    dependents.add(workflowId);
    if (record.state === 'satisfied' && record.observedAt) {
      await signalQuietly(workflowId, anchorSatisfiedSignal, {
        anchorExpectationId: expectation.expectationId,
        observedAt: record.observedAt,
      });
    } else if (record.state === 'withdrawn' && record.supersededBy && supersededByWorkflowId) {
      await signalQuietly(workflowId, anchorMovedSignal, {
        expectationId: record.supersededBy,
        workflowId: supersededByWorkflowId,
      });
    }
  });

  publish();
  if (!input.carried) {
    const retention = settings.factRetention;
    await Promise.all([
      links.supersedes
        ? signalQuietly(links.supersedes, withdrawSignal, {
            reason: `superseded by ${expectation.expectationId}`,
            supersededBy: { expectationId: expectation.expectationId, workflowId: links.self },
          })
        : undefined,
      ledgers.subscribeFactLedger
        .executeWithOptions({ summary: `subscribe to ${links.factLedger}` }, [
          {
            ledgerWorkflowId: links.factLedger,
            subscriberWorkflowId: links.self,
            taskQueue: workflowInfo().taskQueue,
            factKey: expectation.satisfiedBy.factKey,
            retention,
          },
        ])
        .then(({ retained }) => retained && applyFact(retained)),
      ledgers.subscribeSubjectLedger.executeWithOptions({ summary: `subscribe to ${links.subjectLedger}` }, [
        {
          ledgerWorkflowId: links.subjectLedger,
          subscriberWorkflowId: links.self,
          taskQueue: workflowInfo().taskQueue,
          subject: expectation.subject,
        },
      ]),
      linkToAnchor(),
    ]);
  }

  const mayContinueAsNew = () =>
    workflowInfo().continueAsNewSuggested && pendingDeliveries === 0 && allHandlersFinished();

  for (;;) {
    if (isOpen(record.state)) {
      const due = dueChecks(deadlineInputs(), Date.now());
      if (due.horizonReached) horizonChecked = true;
      for (const lapse of due.lapses) raiseLapse(lapse);
      if (due.lapses.length > 0 || due.horizonReached) changed();
    }
    if (mayClose(deadlineInputs(), Date.now())) break;
    if (mayContinueAsNew()) {
      await continueAsNew<typeof expectationWorkflow>({
        ...input,
        carried: { record, horizonChecked, dependents: [...dependents], anchorLink },
      });
    }
    const seen = changes;
    const wake = () => changes !== seen || mayContinueAsNew();
    const next = nextDeadline(deadlineInputs());
    if (next) await condition(wake, Math.max(next.atMs - Date.now(), 1), { summary: deadlineSummary(next) });
    else await condition(wake);
  }

  const self = expectation.expectationId;
  const tell: Promise<void>[] = [];
  if (record.state === 'satisfied' && record.observedAt) {
    const observedAt = record.observedAt;
    for (const dependent of dependents) {
      tell.push(signalQuietly(dependent, anchorSatisfiedSignal, { anchorExpectationId: self, observedAt }));
    }
    for (const target of Object.values(links.after)) {
      tell.push(signalQuietly(target, skippedSignal, { satisfiedExpectationId: self }));
    }
  }
  if (record.state === 'withdrawn' && record.supersededBy && supersededByWorkflowId) {
    const moved = { expectationId: record.supersededBy, workflowId: supersededByWorkflowId };
    for (const dependent of dependents) tell.push(signalQuietly(dependent, anchorMovedSignal, moved));
  }
  tell.push(signalQuietly(links.factLedger, unsubscribeSignal, { workflowId: links.self }));
  tell.push(signalQuietly(links.subjectLedger, unsubscribeSignal, { workflowId: links.self }));
  await Promise.all(tell);
  await condition(() => pendingDeliveries === 0 && allHandlersFinished());
  record.closedAt = nowIso();
  publish();
  return record;
}
