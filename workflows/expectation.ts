/**
 * One workflow per expectation (`expectation:<id>`, DESIGN 3): holds the promise until a fact satisfies it, raises
 * overdue, stalled and skipped lapses on the watcher's clock, follows its anchor, and closes when nothing is pending.
 * Its state and transitions are ExpectationMachine (expectation-machine.ts), wired to Temporal by ExpectationManager
 * (expectation-manager.ts); this file registers the handlers and runs the loop.
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
  const { machine } = expectation;

  setHandler(recordQuery, () => machine.record);
  setHandler(dependentsQuery, () => ({ dependents: expectation.dependentCount, bound: MAX_DEPENDENTS }));
  setHandler(factSignal, (fact) => machine.applyFact(fact, 'router'));
  setHandler(takeFactUpdate, (fact) => expectation.takeFact(fact));
  setHandler(withdrawSignal, (request) => void machine.withdraw(request));
  setHandler(withdrawUpdate, (request) => machine.withdraw(request));
  setHandler(skippedSignal, (skipped) => machine.skip(skipped));
  // Only anchors we registered with send this; a superseded anchor is withdrawn and can no longer be satisfied.
  setHandler(anchorSatisfiedSignal, ({ observedAt }) => machine.applyAnchor(observedAt));
  setHandler(anchorMovedSignal, (moved) => expectation.followAnchor(moved));
  setHandler(registerDependentSignal, (dependent) => expectation.registerDependent(dependent));
  setHandler(resendLapseUpdate, (request) => machine.resendLapse(request), {
    validator: (request) => void machine.validateResend(request),
  });

  const timer = new DeadlineTimer();
  expectation.publish();
  if (!input.carried) await expectation.register();
  else expectation.resumeDeliveries();

  for (;;) {
    if (machine.readDue()) await expectation.readStored();
    else machine.releaseHeld();
    machine.raiseDueLapses();
    if (machine.mayClose()) break;
    if (expectation.mayContinueAsNew()) {
      await continueAsNew<typeof expectationWorkflow>(expectation.nextRunInput());
    }
    const seen = machine.state.changes;
    const wake = () => machine.state.changes !== seen || expectation.mayContinueAsNew();
    const next = machine.nextDeadline();
    await timer.wait(wake, next && { atMs: next.atMs, summary: deadlineSummary(next) });
  }

  // A late window shorter than a delivery's retry budget: the expectation closes, its lapse task goes out no more.
  expectation.abandonDeliveries('the late window ended before the lapse task was delivered');
  await expectation.tellOnClose();
  await condition(() => expectation.idle());
  reportClosed(expectation.record);
  return machine.close();
}
