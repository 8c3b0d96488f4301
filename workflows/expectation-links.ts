/**
 * An expectation's ties to the others (DESIGN 3.3–3.5): the anchor it follows, the dependents anchored on it, the
 * expectation that superseded it, and what it tells each of them and its routers when it ends. The expectation's
 * own state is its machine's (expectation-machine.ts); this is its correspondence.
 */
import {
  getExternalWorkflowHandle,
  proxyActivities,
  proxyLocalActivities,
  type SignalDefinition,
} from '@temporalio/workflow';
import type { ClientActivities } from './activity-types.js';
import { MAX_DEPENDENTS } from '../core/limits.js';
import type { ExpectationRecord } from '../core/types.js';
import { isOpen } from './decisions.js';
import {
  anchorMovedSignal,
  anchorSatisfiedSignal,
  skippedSignal,
  unsubscribeSignal,
  withdrawSignal,
  type AnchorMoved,
  type ExpectationInput,
} from './messages.js';
import type { Leaving } from './expectation-machine.js';
import { owedOnClose, owedToNewDependent, type Owed, type Ties } from './link-messages.js';
import { linkAnchorSummary } from './ui-text.js';

/** The client activities an expectation runs as activity tasks: linking to its anchor. */
export const clientCalls = proxyActivities<ClientActivities>({
  startToCloseTimeout: '30s',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '1m' },
});

/**
 * The same, run as local activities (a marker in the history, no activity task): for the read of what the routers
 * stored before a lapse, which every lapse makes, usually to find nothing. One read is given two minutes; the
 * expectation makes it again after that (ExpectationManager.readStored).
 */
export const localClientCalls = proxyLocalActivities<ClientActivities>({
  startToCloseTimeout: '30s',
  scheduleToCloseTimeout: '2m',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '30s' },
});

/** How many superseded anchors a dependent follows in one go before it gives up (beyond any sane lineage). */
const MAX_ANCHOR_HOPS = 100;

/** Signals another workflow; one that has closed is not open, so there is nobody to tell. */
async function signalQuietly<T>(workflowId: string, signal: SignalDefinition<[T]>, arg: T): Promise<void> {
  try {
    await getExternalWorkflowHandle(workflowId).signal(signal, arg);
  } catch {
    // The target closed.
  }
}

/** Sends one owed message (link-messages.ts) by its signal. */
function send(owed: Owed): Promise<void> {
  if ('anchorSatisfied' in owed) return signalQuietly(owed.to, anchorSatisfiedSignal, owed.anchorSatisfied);
  if ('anchorMoved' in owed) return signalQuietly(owed.to, anchorMovedSignal, owed.anchorMoved);
  if ('skipped' in owed) return signalQuietly(owed.to, skippedSignal, owed.skipped);
  if ('withdraw' in owed) return signalQuietly(owed.to, withdrawSignal, owed.withdraw);
  return signalQuietly(owed.to, unsubscribeSignal, owed.unsubscribe);
}

/** What the links read of the expectation they belong to, and the two things they change in it. */
export interface LinkedExpectation {
  readonly record: ExpectationRecord;
  readonly input: ExpectationInput;
  /** The anchor was satisfied at `observedAt`. */
  applyAnchor(observedAt: string): void;
  /** The dependents moved: the memo says how many there are. */
  publish(): void;
}

export class ExpectationLinks {
  /** Workflow ids of the expectations anchored on this one (carried across continue-as-new). */
  private readonly dependents: Set<string>;
  /** Workflow id of the anchor currently followed; it changes when the anchor is superseded (carried). */
  private anchorLink: string | undefined;
  /** Workflow id of the expectation that superseded this one: its dependents follow it. */
  private supersededByWorkflowId: string | undefined;

  constructor(
    private readonly owner: LinkedExpectation,
    carried?: { dependents: string[]; anchorLink?: string },
  ) {
    this.dependents = new Set(carried?.dependents ?? []);
    this.anchorLink = carried ? carried.anchorLink : owner.input.links.anchor;
  }

  carry(): { dependents: string[]; anchorLink: string | undefined } {
    return { dependents: [...this.dependents], anchorLink: this.anchorLink };
  }

  get dependentCount(): number {
    return this.dependents.size;
  }

  supersededBy(workflowId: string): void {
    this.supersededByWorkflowId = workflowId;
  }

  /**
   * Registers with the current anchor, following superseded anchors to the one that replaced them. `moved`: the
   * current anchor superseded the one before, and may be a moment from its start (LinkAnchorInput.moved).
   */
  async linkToAnchor(moved = false): Promise<void> {
    const { owner } = this;
    for (let hop = 0; this.anchorLink && hop < MAX_ANCHOR_HOPS && isOpen(owner.record.state); hop++) {
      const link = this.anchorLink;
      const result = await clientCalls.linkAnchor.executeWithOptions({ summary: linkAnchorSummary(link) }, [
        {
          anchorWorkflowId: link,
          dependentWorkflowId: owner.input.links.self,
          ...(moved || hop > 0 ? { moved: true } : {}),
        },
      ]);
      if (result.satisfiedObservedAt) owner.applyAnchor(result.satisfiedObservedAt);
      // A moved signal may have re-linked us meanwhile; only follow our own answer if it is still current.
      if (!result.movedTo || this.anchorLink !== link) return;
      this.anchorLink = result.movedTo.workflowId;
    }
  }

  /** The anchor was superseded: link to the one that superseded it. */
  async followAnchor(moved: AnchorMoved): Promise<void> {
    if (!isOpen(this.owner.record.state) || this.anchorLink === moved.workflowId) return;
    this.anchorLink = moved.workflowId;
    await this.linkToAnchor(true);
  }

  /** The record and ties the messages it owes are drawn from (link-messages.ts). */
  private ties(): Ties {
    const { record, input } = this.owner;
    const { dependents, supersededByWorkflowId } = this;
    return {
      record,
      links: input.links,
      dependents,
      ...(supersededByWorkflowId ? { supersededBy: supersededByWorkflowId } : {}),
    };
  }

  /**
   * A dependent registers; one that comes after the anchor was satisfied or superseded is told at once. One past
   * MAX_DEPENDENTS is withdrawn instead (the bridge refuses such a raise first; this guards the carried state).
   */
  async registerDependent(workflowId: string): Promise<void> {
    const full = !this.dependents.has(workflowId) && this.dependents.size >= MAX_DEPENDENTS;
    if (!full) {
      this.dependents.add(workflowId);
      this.owner.publish();
    }
    const owed = owedToNewDependent(this.ties(), workflowId, full);
    if (owed) await send(owed);
  }

  /** Tells the others what the end means to them (owedOnClose), and stores the fact it heard on its subject. */
  tellOnClose({ routerDroppedIt, heard }: Leaving): Promise<unknown> {
    const { links, settings } = this.owner.input;
    const tell: Promise<unknown>[] = owedOnClose(this.ties(), routerDroppedIt).map(send);
    if (heard) {
      const retention = settings.factRetention;
      const storing = localClientCalls.storeOnSubject({
        routerWorkflowId: links.subjectRouter,
        fact: heard,
        retention,
      });
      // Given up after its budget: the siblings' stalls then miss this one fact, the expectation itself is done.
      tell.push(storing.catch(() => undefined));
    }
    return Promise.all(tell);
  }
}
