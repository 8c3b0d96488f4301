/**
 * Replays every recorded history (test/histories/<version>/*.json, written by record-histories.ts) against the
 * current workflow bundle: a change that is not deterministic, and not behind patched(), fails here. Each folder
 * holds the histories one version of the workflows recorded (v1: the workflow subscribed itself to its ledgers;
 * v2: the bridge registers it, docs/raise-path.md; v3: a satisfied expectation sets ExpectationLate behind a patch, and
 * the bridge asks the fact ledger whether anyone awaited a fact; v4: the fact ledger answers recordFact once it has
 * sent the fact on, behind `answer-after-forwarding`; v5: a continued run does not schedule again a delivery a resend in
 * its first workflow task started, behind `resume-skips-in-flight`, whose old double delivery v4 holds; the fact
 * ledger holds its signals back for a caller that delivers by `takeFact`, behind `caller-delivers-first`); every one
 * of them must keep replaying. They replay on the tracing bundle too: a worker switched to tracing (or from it) runs
 * the same workflows with the OpenTelemetry interceptors around them, which must not change what they decide. One
 * shape does not: a fact ledger from before `answer-after-forwarding` whose recordFact answer raced its forward (the
 * race that patch closed) settles the race the other way when the interceptors' awaits stand between them
 * (docs/operations.md, *Tracing and replay*).
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import proto from '@temporalio/proto';
import { Worker, type ReplayWorkerOptions } from '@temporalio/worker';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { bundleWorkflows, discardedWorkflowSpans } from '../../src/temporal/workflow-bundle.js';

const { History } = proto.temporal.api.history.v1;
const here = path.dirname(fileURLToPath(import.meta.url));
const versions = ['v1', 'v2', 'v3', 'v4', 'v5'];

const filesOf = (version: string) =>
  readdirSync(path.join(here, version))
    .filter((file) => file.endsWith('.json'))
    .sort();

function load(version: string, file: string) {
  return History.fromObject(JSON.parse(readFileSync(path.join(here, version, file), 'utf8')));
}

let tracingBundle: string;

/** Histories the tracing bundle decides differently (above): the unpatched fact ledger's answer-and-forward race. */
const RACING_WITHOUT_PATCH: Record<string, string[]> = {
  v1: ['v1/fact-ledger-satisfied'],
  v2: ['v2/fact-ledger-satisfied'],
  v3: ['v3/fact-ledger-satisfied'],
};

beforeAll(async () => {
  tracingBundle = await bundleWorkflows({ tracing: true });
}, 120_000);

/** The failures of replaying `version`'s histories on a worker of `options`. */
async function replayFailures(version: string, options: ReplayWorkerOptions): Promise<{ failures: string[]; replayed: number }> {
  const files = filesOf(version);
  const histories = files.map((file) => ({ workflowId: `${version}/${file.replace(/\.json$/, '')}`, history: load(version, file) }));
  const failures: string[] = [];
  let replayed = 0;
  for await (const result of Worker.runReplayHistories(options, histories)) {
    replayed++;
    if (result.error) failures.push(`${result.workflowId}: ${result.error.message}`);
  }
  return { failures, replayed };
}

describe.each(versions)('histories recorded by %s', (version) => {
  const files = filesOf(version);

  it('are of all three workflow types, continue-as-new included', () => {
    const types = new Set(
      files.map((file) => load(version, file).events[0]?.workflowExecutionStartedEventAttributes?.workflowType?.name),
    );
    const continued = files.filter((file) => load(version, file).events.at(-1)?.workflowExecutionContinuedAsNewEventAttributes);

    expect([...types].sort()).toEqual(['expectationWorkflow', 'factLedgerWorkflow', 'subjectLedgerWorkflow']);
    expect(continued.length).toBeGreaterThan(0);
  });

  it('replay without a non-determinism error', async () => {
    const { failures, replayed } = await replayFailures(version, { workflowBundle: { codePath: inject('workflowBundlePath') } });

    expect(failures).toEqual([]);
    expect(replayed).toBe(files.length);
  });

  it('replay on the tracing bundle without a non-determinism error, but for the unpatched fact ledger race', async () => {
    const { failures, replayed } = await replayFailures(version, { workflowBundle: { code: tracingBundle }, sinks: discardedWorkflowSpans });

    const failed = failures.map((failure) => failure.slice(0, failure.indexOf(':')));
    expect(failed).toEqual(RACING_WITHOUT_PATCH[version] ?? []);
    for (const failure of failures) expect(failure).toMatch(/Nondeterminism error: Signal external WF machine/);
    expect(replayed).toBe(files.length);
  });
});
