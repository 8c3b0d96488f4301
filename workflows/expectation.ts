/**
 * One workflow per expectation (`expectation:<id>`, DESIGN 3): holds the promise until a fact satisfies it, raises
 * overdue, stalled and skipped lapses on the watcher's clock, follows its anchor, and closes when nothing is pending.
 * The state, its handlers and decisions are ExpectationManager (expectation-manager.ts); this is the loop.
 */
import { condition, continueAsNew, setHandler } from '@temporalio/workflow';
import { MAX_DEPENDENTS } from '../core/limits.js';
import type { ExpectationRecord } from '../core/types.js';
import { DeadlineTimer } from './deadline-timer.js';
import { ExpectationManager } from './expectation-manager.js';
import {
  anchorMovedSignal,
  anchorSatisfiedSignal,
  dependentsQuery,
  factSignal,
  recordQuery,
  registerDependentSignal,
  resendLapseUpdate,
  skippedSignal,
  takeFactUpdate,
  withdrawSignal,
  withdrawUpdate,
  type ExpectationInput,
} from './messages.js';
import { reportClosed } from './statistics.js';
import { deadlineSummary } from './ui-text.js';

/** Holds one expectation until it is satisfied, withdrawn, or its late window after the last lapse has passed. */
export async function expectationWorkflow(input: ExpectationInput): Promise<ExpectationRecord> {
  const expectation = new ExpectationManager(input);

  setHandler(recordQuery, () => expectation.record);
  setHandler(dependentsQuery, () => ({ dependents: expectation.dependentCount, bound: MAX_DEPENDENTS }));
  setHandler(factSignal, (fact) => expectation.applyFact(fact, 'router'));
  setHandler(takeFactUpdate, (fact) => expectation.takeFact(fact));
  setHandler(withdrawSignal, (request) => void expectation.withdraw(request));
  setHandler(withdrawUpdate, (request) => expectation.withdraw(request));
  setHandler(skippedSignal, (skipped) => expectation.skip(skipped));
  // Only anchors we registered with send this; a superseded anchor is withdrawn and can no longer be satisfied.
  setHandler(anchorSatisfiedSignal, ({ observedAt }) => expectation.applyAnchor(observedAt));
  setHandler(anchorMovedSignal, (moved) => expectation.followAnchor(moved));
  setHandler(registerDependentSignal, (dependent) => expectation.registerDependent(dependent));
  setHandler(resendLapseUpdate, (request) => expectation.resendLapse(request), {
    validator: (request) => void expectation.validateResend(request),
  });

  const timer = new DeadlineTimer();
  expectation.publish();
  if (!input.carried) await expectation.register();
  else expectation.resumeDeliveries();

  for (;;) {
    if (expectation.readDue()) await expectation.readStored();
    else expectation.releaseHeld();
    expectation.raiseDueLapses();
    if (expectation.mayClose()) break;
    if (expectation.mayContinueAsNew()) {
      await continueAsNew<typeof expectationWorkflow>(expectation.nextRunInput());
    }
    const seen = expectation.changes;
    const wake = () => expectation.changes !== seen || expectation.mayContinueAsNew();
    const next = expectation.nextDeadline();
    await timer.wait(wake, next && { atMs: next.atMs, summary: deadlineSummary(next) });
  }

  // A late window shorter than a delivery's retry budget: the expectation closes, its lapse task goes out no more.
  expectation.abandonDeliveries('the late window ended before the lapse task was delivered');
  await expectation.tellOnClose();
  await condition(() => expectation.idle());
  reportClosed(expectation.record);
  return expectation.close();
}
