/**
 * The Temporal side of one expectation: its machine (expectation-machine.ts) wired to the deliveries, the links and
 * the publication, and the calls that wait (the read of the routers, takeFact, the close). workflows/expectation.ts
 * registers the handlers and runs the loop.
 */
import { allHandlersFinished, condition, log, workflowInfo } from '@temporalio/workflow';
import type { ExpectationRecord, Fact } from '../core/types.js';
import type { StoredFacts } from './activity-types.js';
import { isOpen } from './decisions.js';
import { ExpectationLinks, localClientCalls } from './expectation-links.js';
import { ExpectationMachine } from './expectation-machine.js';
import { ExpectationPublication } from './expectation-publication.js';
import { LapseDeliveries } from './lapse-deliveries.js';
import {
  factTakenOf,
  type AnchorMoved,
  type CarriedExpectationState,
  type ExpectationInput,
  type FactTaken,
} from './messages.js';

/** How long a failed read of the routers' histories waits before it is made again (readStored). */
const STORED_READ_RETRY_MS = 60_000;

/** How long a decision waits for the routers' histories to be readable before it is made on what reached it. */
const STORED_READ_GIVE_UP_MS = 60 * 60_000;

export class ExpectationManager {
  /** The state and its transitions. */
  readonly machine: ExpectationMachine;
  /** The anchor, the dependents and the successor, and what they are told (expectation-links.ts). */
  private readonly links: ExpectationLinks;
  private readonly deliveries: LapseDeliveries;
  private readonly publication: ExpectationPublication;

  constructor(readonly input: ExpectationInput) {
    this.machine = new ExpectationMachine(input, {
      now: () => Date.now(),
      deliver: (entry) => this.deliveries.start(entry),
      abandon: (reason) => this.abandonDeliveries(reason),
      resend: (entry, requestedBy) => this.deliveries.resend(entry, requestedBy),
      publish: () => this.publish(),
      supersededBy: (workflowId) => this.links.supersededBy(workflowId),
    });
    this.links = new ExpectationLinks(this, input.carried);
    this.publication = new ExpectationPublication(this.record, () => this.links.dependentCount);
    this.deliveries = new LapseDeliveries(this.record, input.agent, () => this.publish());
  }

  get record(): ExpectationRecord {
    return this.machine.record;
  }

  /** How many expectations are anchored on this one. */
  get dependentCount(): number {
    return this.links.dependentCount;
  }

  /** Search attributes, memo and current details, each when it moved (ExpectationPublication). */
  publish(): void {
    this.publication.publish();
  }

  /** The anchor was satisfied at `observedAt` (ExpectationMachine.applyAnchor). */
  applyAnchor(observedAt: string): void {
    this.machine.applyAnchor(observedAt);
  }

  /** What continue-as-new carries: record, horizon check and links (pending deliveries are on the record). */
  private carry(): CarriedExpectationState {
    const { record, horizonChecked } = this.machine.state;
    return { record, horizonChecked, ...this.links.carry() };
  }

  /** The input of the next run: the same expectation, links and settings, and the carried state. */
  nextRunInput(): ExpectationInput {
    const { carried: _carried, ...rest } = this.input;
    return { ...rest, carried: this.carry() };
  }

  /**
   * What a newly raised expectation does once: links to its anchor. The bridge subscribed it to both routers and
   * withdrew the expectation it supersedes before it answered `raised` (docs/raise-path.md).
   */
  register(): Promise<unknown> {
    return this.links.linkToAnchor();
  }

  /** A continued run schedules again the deliveries its predecessor left in retry. */
  resumeDeliveries(): void {
    this.deliveries.resume();
  }

  /** The fact by update (`takeFact`): applied as the signal applies it; answers with the state it left. */
  async takeFact(fact: Fact): Promise<FactTaken> {
    this.machine.applyFact(fact);
    await condition(() => !this.machine.holds(fact));
    return factTakenOf(this.record);
  }

  /** The anchor was superseded: link to the one that superseded it. */
  followAnchor(moved: AnchorMoved): Promise<void> {
    return this.links.followAnchor(moved);
  }

  /** A dependent registers (ExpectationLinks.registerDependent). */
  registerDependent({ workflowId }: { workflowId: string }): Promise<void> {
    return this.links.registerDependent(workflowId);
  }

  /**
   * Before a lapse: what the routers stored (DESIGN 3.3), read from their histories in one local activity. A read that
   * failed within its budget is made again a minute later, for as long as the expectation stays open, up to
   * STORED_READ_GIVE_UP_MS: a lapse decided without it could be one that a stored fact rules out, so the read delays
   * the lapse rather than fabricate it. Past that, it is decided on what reached the expectation.
   */
  async readStored(): Promise<void> {
    const read = this.machine.startRead();
    const giveUpAtMs = Date.now() + STORED_READ_GIVE_UP_MS;
    let stored: StoredFacts = {};
    for (;;) {
      try {
        stored = await localClientCalls.storedFacts(read.input);
        break;
      } catch (error) {
        if (Date.now() >= giveUpAtMs) {
          log.warn("the routers' histories could not be read: the lapse is decided on the facts that reached it", {
            error: String(error),
          });
          break;
        }
        log.warn("the routers' histories could not be read: the decision waits, and reads again in a minute", {
          error: String(error),
        });
        if (await condition(() => !isOpen(this.record.state), STORED_READ_RETRY_MS)) break;
      }
    }
    this.machine.finishRead(read, stored);
  }

  /** No lapse task goes out once the expectation has ended (DESIGN 3.8): satisfied, withdrawn, or closing. */
  abandonDeliveries(reason: string): void {
    if (this.deliveries.pending > 0) this.deliveries.abandon(reason);
  }

  /**
   * Temporal suggests it and nothing of this run would be lost: no handler still running, and no delivery in
   * retry unless the next run takes it over.
   */
  mayContinueAsNew(): boolean {
    return workflowInfo().continueAsNewSuggested && allHandlersFinished() && this.machine.quiescent();
  }

  /** No delivery and no handler still running: the workflow may return. */
  idle(): boolean {
    return this.deliveries.pending === 0 && allHandlersFinished();
  }

  /** Tells the others what the end means to them, and leaves its router (ExpectationLinks.tellOnClose). */
  tellOnClose(): Promise<unknown> {
    return this.links.tellOnClose(this.machine.leaving());
  }
}
