/**
 * What an expectation shows the operator and the bridge (DESIGN 6): its search attributes, its memo and its current
 * details, each written only when it moved.
 */
import { setCurrentDetails, upsertMemo, upsertSearchAttributes } from '@temporalio/workflow';
import type { ExpectationRecord } from '../core/types.js';
import type { ExpectationMemo } from './messages.js';
import { ExpectationDueAt, ExpectationLate, ExpectationState } from './search-attributes.js';
import { currentDetails } from './ui-text.js';

type Indexed = Pick<ExpectationRecord, 'state' | 'dueAt' | 'late'>;

const indexedOf = ({ state, dueAt, late }: Indexed): Indexed => ({
  state,
  dueAt,
  ...(late !== undefined ? { late } : {}),
});

/** The expectation's publication; the start (or the previous run) wrote what the record holds when it is made. */
export class ExpectationPublication {
  /** The search attribute values last upserted. */
  private indexed: Indexed;
  /** The memo last written, as JSON. */
  private memoWritten: string;

  constructor(
    private readonly record: ExpectationRecord,
    private readonly dependents: () => number,
  ) {
    this.indexed = indexedOf(record);
    this.memoWritten = JSON.stringify(this.memo());
  }

  /** What the memo holds: the record as it is now and how many dependents it has. */
  private memo(): ExpectationMemo {
    return { expectationId: this.record.expectation.expectationId, record: this.record, dependents: this.dependents() };
  }

  /**
   * Search attributes when state, dueAt or lateness moved (one upsert, a billable action), the memo when the record
   * or the dependents moved (not an action; the visibility store lists it, closed runs' too), and the current details.
   */
  publish(): void {
    const { record, indexed } = this;
    const { late } = record;
    if (indexed.state !== record.state || indexed.dueAt !== record.dueAt || indexed.late !== late) {
      upsertSearchAttributes([
        { key: ExpectationState, value: record.state },
        { key: ExpectationDueAt, value: new Date(record.dueAt) },
        ...(late !== undefined ? [{ key: ExpectationLate, value: late }] : []),
      ]);
      this.indexed = indexedOf(record);
    }
    this.writeMemo();
    setCurrentDetails(currentDetails(record));
  }

  /** Writes the memo when the record or the dependents moved since it was last written. */
  private writeMemo(): void {
    const memo = JSON.stringify(this.memo());
    if (memo === this.memoWritten) return;
    upsertMemo({ record: this.record, dependents: this.dependents() });
    this.memoWritten = memo;
  }
}
