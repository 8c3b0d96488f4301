/**
 * Records the encrypted histories replay-encrypted.test.ts replays: `npx tsx test/histories/record-encrypted.ts`.
 * The workflows with the AES-256-GCM codec on, keyed by codec-keys.json (a test key file, nothing
 * real is sealed with it), across one key rotation: the expectation is raised and lapses (its delivery an activity)
 * under the old key 2026-01, then the worker and the client restart with 2026-07 current and a late fact satisfies
 * it, so its history and its routers' hold payloads sealed under both ids. Writes `v6-encrypted/<name>.json`.
 */
import { randomUUID } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Client } from '@temporalio/client';
import proto from '@temporalio/proto';
import { loadCodecKeys } from '../../src/temporal/codec-keys.js';
import { startDevServer } from '../../dev/temporal/dev-server.js';
import { EncryptionCodec } from '../../src/temporal/encryption-codec.js';
import { getExpectationRecord, recordFact, startExpectation } from '../../src/temporal/expectations.js';
import { expectationLinks } from '../../core/ids.js';
import type { WatcherWorker } from '../../src/temporal/worker.js';
import { untilTrue } from '../support/poll.js';
import { atRest } from '../support/routers.js';
import { subscribeSignal, type ExpectationInput } from '../../workflows/messages.js';
import { startTestAgent } from '../support/agent.js';
import { freePort } from '../support/net.js';
import { recorderWorker } from './recorder-worker.js';
import { deliveryExpectation } from '../support/fixtures.js';

const { History } = proto.temporal.api.history.v1;
const toJson = (history: proto.temporal.api.history.v1.IHistory) =>
  History.toObject(History.fromObject(history), { longs: String, enums: String, bytes: String });

const here = path.dirname(fileURLToPath(import.meta.url));
const folder = path.join(here, 'v6-encrypted');
const keys = loadCodecKeys(path.join(here, 'codec-keys.json'));
/** Before the rotation: the same keys, the old one current. */
const before = new EncryptionCodec({ ...keys, current: '2026-01' });
const after = new EncryptionCodec(keys);
const taskQueue = 'record-encrypted';
const suffix = randomUUID().slice(0, 8);
const settings = { lateWindow: 'PT3S', factRetention: 'PT2S' };

const server = await startDevServer({ port: await freePort() });
const agent = await startTestAgent();

async function startWorker(codec: EncryptionCodec): Promise<{ watcher: WatcherWorker; running: Promise<void> }> {
  const watcher = await recorderWorker(server, taskQueue, { 'shipping-agent': agent.cardUrl }, { dataConverter: { payloadCodecs: [codec] } });
  return { watcher, running: watcher.run() };
}

function waitFor(what: string, check: () => Promise<boolean>, timeoutMs = 60_000): Promise<void> {
  return untilTrue(check, { timeoutMs, retryErrors: true, describe: () => `timed out waiting for ${what}` });
}

const e = deliveryExpectation(`rotated-${suffix}`, new Date(Date.now() + 1_000).toISOString(), {
  expects: `the sealed shipment is delivered (rotated-${suffix})`,
  satisfiedBy: { factKey: `shipment:rotated-${suffix}:delivered` },
  grace: 'PT1S',
});
const input: ExpectationInput = {
  expectation: e,
  agent: { id: 'shipping-agent' },
  origin: { taskId: `origin-${suffix}`, contextId: `ctx-${suffix}` },
  lineage: 0,
  links: expectationLinks(e, taskQueue),
  settings,
};

try {
  // Under the old key: raised, a fact on the subject, overdue, the lapse delivered.
  let worker = await startWorker(before);
  let client: Client = worker.watcher.client;
  await startExpectation(client, taskQueue, input);
  await recordFact(client, taskQueue, { factKey: `shipment:rotated-${suffix}:scan`, observedAt: new Date().toISOString(), subject: e.subject, source: 'carrier-feed' }, settings);
  await agent.waitForMessages(1, 30_000);
  await waitFor('the lapse delivered', async () => (await getExpectationRecord(client, e.expectationId))?.lapses[0]?.delivery.status === 'delivered');
  await worker.watcher.shutdown();
  await worker.running;

  // Rotated: the new key current, the old one kept; a late fact satisfies it and everything closes.
  worker = await startWorker(after);
  client = worker.watcher.client;
  // The fact router's first task on the new worker is a repeated subscription (a no-op), not the fact's update: an update
  // that reaches a workflow on a worker that has not cached it yet writes a history that does not replay (its signal
  // lands between the update's accepted and completed events), a fault of its own, with or without the codec.
  await client.workflow.getHandle(input.links.factRouter).signal(subscribeSignal, { workflowIds: [input.links.self], factKeys: [e.satisfiedBy.factKey] });
  await waitFor('the repeated subscription handled', () => atRest(client, input.links.factRouter));
  await recordFact(client, taskQueue, { factKey: e.satisfiedBy.factKey, observedAt: new Date().toISOString(), subject: e.subject, source: 'carrier-feed' }, settings);

  const recorded = [
    { name: 'expectation-rotated-key', workflowId: input.links.self },
    { name: 'fact-router-rotated-key', workflowId: input.links.factRouter },
    { name: 'fact-router-subject-rotated-key', workflowId: input.links.subjectRouter },
  ];
  mkdirSync(folder, { recursive: true });
  for (const { name, workflowId } of recorded) {
    const handle = client.workflow.getHandle(workflowId);
    // The fact router never closes: it is recorded at rest (its last task done), once the expectation has closed.
    const done = async () => (workflowId.startsWith('facts:') ? atRest(client, workflowId) : (await handle.describe()).status.name === 'COMPLETED');
    await waitFor(`${name} at rest`, done);
    writeFileSync(path.join(folder, `${name}.json`), JSON.stringify(toJson(await handle.fetchHistory())) + '\n');
  }
  console.log(`wrote ${recorded.length} histories to ${folder}`);

  await worker.watcher.shutdown();
  await worker.running;
} finally {
  await agent.close();
  await server.stop();
}
