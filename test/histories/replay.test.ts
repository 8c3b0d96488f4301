/**
 * Replays every recorded history (test/histories/*.json, written by record-histories.ts) against the current
 * workflow bundle: a change that is not deterministic, and not behind patched(), fails here.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import proto from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import { expect, inject, it } from 'vitest';

const { History } = proto.temporal.api.history.v1;
const here = path.dirname(fileURLToPath(import.meta.url));
const files = readdirSync(here).filter((file) => file.endsWith('.json')).sort();

function load(file: string) {
  return History.fromObject(JSON.parse(readFileSync(path.join(here, file), 'utf8')));
}

it('has recorded histories of all three workflow types, continue-as-new included', () => {
  const types = new Set(
    files.map((file) => load(file).events[0]?.workflowExecutionStartedEventAttributes?.workflowType?.name),
  );
  const continued = files.filter((file) => load(file).events.at(-1)?.workflowExecutionContinuedAsNewEventAttributes);

  expect([...types].sort()).toEqual(['expectationWorkflow', 'factLedgerWorkflow', 'subjectLedgerWorkflow']);
  expect(continued.length).toBeGreaterThan(0);
});

it('replays every recorded history without a non-determinism error', async () => {
  const histories = files.map((file) => ({ workflowId: file.replace(/\.json$/, ''), history: load(file) }));
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
