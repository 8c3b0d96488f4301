/**
 * Replays every recorded history (test/histories/<version>/*.json, written by record-histories.ts) against the
 * current workflow bundle: a change that is not deterministic, and not behind patched(), fails here. Each folder
 * holds the histories one version of the workflows recorded. Nothing has been released yet, so there is one, v6,
 * recorded again whenever the workflows change shape. From v1.0.0 on, a change goes behind patched() and a new folder
 * is recorded beside this one, which must keep replaying. They replay on the tracing bundle too: a worker switched
 * to tracing (or from it) runs the same workflows with the OpenTelemetry interceptors around them, which must not
 * change what they decide.
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
const versions = ['v6'];

const filesOf = (version: string) =>
  readdirSync(path.join(here, version))
    .filter((file) => file.endsWith('.json'))
    .sort();

function load(version: string, file: string) {
  return History.fromObject(JSON.parse(readFileSync(path.join(here, version, file), 'utf8')));
}

let tracingBundle: string;


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

  it('are of both workflow types, continue-as-new included', () => {
    const types = new Set(
      files.map((file) => load(version, file).events[0]?.workflowExecutionStartedEventAttributes?.workflowType?.name),
    );
    const continued = files.filter((file) => load(version, file).events.at(-1)?.workflowExecutionContinuedAsNewEventAttributes);

    expect([...types].sort()).toEqual(['expectationWorkflow', 'factRouterWorkflow']);
    expect(continued.length).toBeGreaterThan(0);
  });

  it('replay without a non-determinism error', async () => {
    const { failures, replayed } = await replayFailures(version, { workflowBundle: { codePath: inject('workflowBundlePath') } });

    expect(failures).toEqual([]);
    expect(replayed).toBe(files.length);
  });

  it('replay on the tracing bundle without a non-determinism error', async () => {
    const { failures, replayed } = await replayFailures(version, { workflowBundle: { code: tracingBundle }, sinks: discardedWorkflowSpans });

    expect(failures).toEqual([]);
    expect(replayed).toBe(files.length);
  });
});
