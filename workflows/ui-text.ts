/**
 * What an expectation shows an operator in the Temporal UI (DESIGN 6): the static summary and details the bridge
 * sets when it starts the workflow, the current details the workflow keeps up to date, and the summaries of its
 * timers and activities. Pure functions of the input and the record, so every text is unit-tested exactly.
 */
import type { Expectation, ExpectationRecord, LapseKind } from '../core/types.js';
import type { Deadline } from './decisions.js';
import type { ExpectationInput } from './messages.js';

const iso = (ms: number): string => new Date(ms).toISOString();

/** A markdown table cell: a pipe would end the cell and a newline the row. */
const cell = (value: string): string => value.replace(/\|/g, '\\|').replace(/\n/g, ' ');

/** The static summary: `<kind>: <expects> (due <dueAt>)`, dueAt as raised. */
export function expectationSummary(expectation: Pick<Expectation, 'kind' | 'expects' | 'dueAt'>): string {
  return `${expectation.kind}: ${expectation.expects} (due ${expectation.dueAt})`;
}

/**
 * The static details: the expectation as a markdown table, one row per field that is set. `subject` is the value of
 * the `ExpectationSubject` search attribute (`type/id`, hashed when long: core/ids.ts `subjectKey`).
 */
export function expectationDetails(input: ExpectationInput, subject: string): string {
  const e = input.expectation;
  const rows: Array<[string, string | undefined]> = [
    ['expectationId', e.expectationId],
    ['kind', e.kind],
    ['subject', subject],
    ['expects', e.expects],
    ['satisfiedBy.factKey', e.satisfiedBy.factKey],
    ['dueAt', e.dueAt],
    ['grace', e.grace],
    ['anchor', e.anchor ? `${e.anchor.expectationId} + ${e.anchor.offset}` : undefined],
    ['after', e.after?.join(', ')],
    ['horizon', e.horizon],
    ['basis', e.basis],
    ['supersedes', e.supersedes],
    ['lineage', String(input.lineage)],
    ['agent', input.agent.id],
    ['origin task', input.origin.taskId],
    ['origin context', input.origin.contextId],
  ];
  const body = rows
    .filter(([, value]) => value !== undefined && value !== '')
    .map(([k, v]) => `| ${k} | ${cell(v!)} |`);
  return ['| field | value |', '|---|---|', ...body].join('\n');
}

/** The current details in markdown: state, current due, satisfaction or withdrawal, and one line per lapse. */
export function currentDetails(record: ExpectationRecord): string {
  const due =
    record.dueAt === record.projectedDueAt ? record.dueAt : `${record.dueAt} (projected ${record.projectedDueAt})`;
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
      const { resentAt, resentBy } = delivery;
      const resent = resentAt ? ` · resent at ${resentAt}${resentBy ? ` by ${resentBy}` : ''}` : '';
      return `- **${lapse.lapse}** at ${lapse.lapsedAt} (due ${lapse.dueAt}) · ${status}${resent}${task}`;
    });
    paragraphs.push(lines.join('\n'));
  }
  return paragraphs.join('\n\n');
}

/** The summary of the timer that waits for a deadline. */
export function deadlineSummary(deadline: Deadline): string {
  const at = iso(deadline.atMs);
  if (deadline.kind === 'overdue') return `overdue check at ${at}`;
  if (deadline.kind === 'stalled') return `stalled check at ${at}`;
  if (deadline.kind === 'skipped') return `skipped lapse decided at ${at}`;
  return `late window ends at ${at}`;
}

/** The summary of the activity that subscribes the expectation to its fact router. */
export const subscribeSummary = (routerId: string): string => `subscribe to ${routerId}`;

/** The summary of the activity that registers a dependent with its anchor. */
export const linkAnchorSummary = (anchorWorkflowId: string): string => `link to anchor ${anchorWorkflowId}`;

/** The summary of the activity that delivers a lapse task (`resend`: which resend an admin asked for, if one). */
export const deliverLapseSummary = (lapse: LapseKind, agentId: string, resend?: number): string =>
  resend ? `re-send ${lapse} lapse to ${agentId} (resend ${resend})` : `deliver ${lapse} lapse to ${agentId}`;
