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
import type { LedgerActivities } from './activity-types.js';
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
import { linkAnchorSummary } from './ui-text.js';

/** The ledger activities an expectation runs as activity tasks: linking to its anchor. */
export const ledgers = proxyActivities<LedgerActivities>({
  startToCloseTimeout: '30s',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '1m' },
});

/**
 * The same, run as local activities (a marker in the history, no activity task): for the read of what the routers
 * stored before a lapse, which every lapse makes, usually to find nothing. Bounded: a read that fails for two minutes
 * is given up, and the lapse decided on what reached the expectation.
 */
export const localLedgers = proxyLocalActivities<LedgerActivities>({
  startToCloseTimeout: '30s',
  scheduleToCloseTimeout: '2m',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '30s' },
});

/** How many superseded anchors a dependent follows in one go before it gives up (beyond any sane lineage). */
const MAX_ANCHOR_HOPS = 100;

/** Signals another workflow; one that has closed is not open, so there is nobody to tell. */
async function signalQuietly<T extends unknown[]>(workflowId: string, signal: SignalDefinition<T>, ...args: T) {
  try {
    await getExternalWorkflowHandle(workflowId).signal(signal, ...args);
  } catch {
    // The target closed.
  }
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
      const result = await ledgers.linkAnchor.executeWithOptions({ summary: linkAnchorSummary(link) }, [
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

  /**
   * A dependent registers; one that comes after the anchor was satisfied or superseded is told at once. One past
   * MAX_DEPENDENTS is withdrawn instead (the bridge refuses such a raise first; this guards the carried state).
   */
  async registerDependent(workflowId: string): Promise<void> {
    const { record, input } = this.owner;
    const self = input.expectation.expectationId;
    if (!this.dependents.has(workflowId) && this.dependents.size >= MAX_DEPENDENTS) {
      const reason = `not anchored: expectation ${JSON.stringify(self)} already has ${MAX_DEPENDENTS} dependents, its bound; withdrawn, as its due time would never follow the anchor`;
      await signalQuietly(workflowId, withdrawSignal, { reason });
      return;
    }
    this.dependents.add(workflowId);
    this.owner.publish();
    if (record.state === 'satisfied' && record.observedAt) {
      await signalQuietly(workflowId, anchorSatisfiedSignal, {
        anchorExpectationId: self,
        observedAt: record.observedAt,
      });
    } else if (record.state === 'withdrawn' && record.supersededBy && this.supersededByWorkflowId) {
      await signalQuietly(workflowId, anchorMovedSignal, {
        expectationId: record.supersededBy,
        workflowId: this.supersededByWorkflowId,
      });
    }
  }

  /**
   * Tells the others what the end means to them: a satisfied expectation its dependents (anchor satisfied) and the
   * expectations it comes after (skipped); a superseded one its dependents (anchor moved); its router to drop it.
   */
  tellOnClose({ routerDroppedIt, heard }: Leaving): Promise<unknown> {
    const { record, input } = this.owner;
    const { links } = input;
    const self = input.expectation.expectationId;
    const tell: Promise<void>[] = [];
    if (record.state === 'satisfied' && record.observedAt) {
      const observedAt = record.observedAt;
      for (const dependent of this.dependents) {
        tell.push(signalQuietly(dependent, anchorSatisfiedSignal, { anchorExpectationId: self, observedAt }));
      }
      const receivedAt = record.satisfiedBy?.receivedAt;
      for (const target of Object.values(links.after)) {
        tell.push(
          signalQuietly(target, skippedSignal, { satisfiedExpectationId: self, ...(receivedAt ? { receivedAt } : {}) }),
        );
      }
    }
    if (record.state === 'withdrawn' && record.supersededBy && this.supersededByWorkflowId) {
      const moved = { expectationId: record.supersededBy, workflowId: this.supersededByWorkflowId };
      for (const dependent of this.dependents) tell.push(signalQuietly(dependent, anchorMovedSignal, moved));
    }
    if (!routerDroppedIt) tell.push(signalQuietly(links.factRouter, unsubscribeSignal, { workflowId: links.self }));
    if (heard) {
      const retention = input.settings.factRetention;
      const storing = localLedgers.storeOnSubject({ routerWorkflowId: links.subjectRouter, fact: heard, retention });
      // Given up after its budget: the siblings' stalls then miss this one fact, the expectation itself is done.
      tell.push(storing.catch(() => undefined));
    }
    return Promise.all(tell);
  }
}
