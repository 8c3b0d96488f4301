/**
 * Replays every recorded history (test/histories/<version>/*.json, written by record-histories.ts) against the
 * current workflow bundle: a change that is not deterministic, and not behind patched(), fails here. Each folder
 * holds the histories one version of the workflows recorded (v1: the workflow subscribed itself to its ledgers;
 * v2: the bridge registers it, docs/raise-path.md; v3: a satisfied expectation sets ExpectationLate behind a patch, and
 * the bridge asks the fact ledger whether anyone awaited a fact; v4: the fact ledger answers recordFact once it has
 * sent the fact on, behind `answer-after-forwarding`; v5: a continued run does not schedule again a delivery a resend in
 * its first workflow task started, behind `resume-skips-in-flight`, whose old double delivery v4 holds; the fact
 * ledger holds its signals back for a caller that delivers by `takeFact`, behind `caller-delivers-first`); every one
 * of them must keep replaying.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import proto from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import { describe, expect, inject, it } from 'vitest';

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
    const histories = files.map((file) => ({ workflowId: `${version}/${file.replace(/\.json$/, '')}`, history: load(version, file) }));
    const failures: string[] = [];

    for await (const result of Worker.runReplayHistories(
      { workflowBundle: { codePath: inject('workflowBundlePath') } },
      histories,
    )) {
      if (result.error) failures.push(`${result.workflowId}: ${result.error.message}`);
    }

    expect(failures).toEqual([]);
    expect(histories.length).toBe(files.length);
  });
});
