/**
 * Records the histories replayed by replay.test.ts: `npx tsx test/histories/record-histories.ts [folder]`.
 * Starts its own dev server (continue-as-new suggested at 300 events), the real worker and real test agents, runs
 * one scenario per behaviour of each workflow type in real time (seconds), waits for every workflow to close, and
 * writes each run's history to `test/histories/<folder>/<name>.json`. The folder (argument, or HISTORIES_FOLDER)
 * is `v6` by default: each released version of the workflows keeps the folder it was recorded into (v1: before
 * the bridge registered expectations, docs/raise-path.md), and a new version records into a new folder after a
 * deliberate, patched() change (a released version's folder is never recorded again). Names after the folder write
 * only those histories (`... v2 expectation-lapse-resent`): how a released folder gains the scenario of a new message
 * handler, which its workflows could receive all along, without its other histories being recorded again.
 */
import { randomUUID } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { WithStartWorkflowOperation, type Client } from '@temporalio/client';
import proto from '@temporalio/proto';
import type { Expectation, Fact } from '../../core/types.js';
import { startDevServer } from '../../dev/temporal/dev-server.js';
import {
  awaitFactTaken,
  getExpectationRecord,
  recordFact,
  recordFactRouted,
  startExpectation,
  storeFacts,
  withdrawExpectation,
} from '../../src/temporal/expectations.js';
import { resendLapse } from '../../src/temporal/resend-lapse.js';
import { expectationLinks, factRouterWorkflowId, subjectRouterWorkflowId } from '../../core/ids.js';
import type { expectationWorkflow } from '../../workflows/expectation.js';
import { CLIENT_FORWARDS_FROM } from '../../workflows/fact-router.js';
import { registerDependentSignal, resendLapseUpdate, type ExpectationInput } from '../../workflows/messages.js';
import { lapseMessageId } from '../../core/message-id.js';
import { startTestAgent } from '../support/agent.js';
import { freePort } from '../support/net.js';
import { untilTrue } from '../support/poll.js';
import { atRest } from '../support/routers.js';
import { recorderWorker } from './recorder-worker.js';
import { deliveryExpectation, fact as keyFact } from '../support/fixtures.js';

const { History } = proto.temporal.api.history.v1;

/**
 * The history as JSON (protobufjs object form: enums by name, 64-bit integers and bytes as strings), read back
 * by replay.test.ts with `History.fromObject`. (The SDK's historyToJSON trips over a second protobufjs copy.)
 */
const toJson = (history: proto.temporal.api.history.v1.IHistory) =>
  History.toObject(History.fromObject(history), { longs: String, enums: String, bytes: String });

const here = path.dirname(fileURLToPath(import.meta.url));
const folder = path.resolve(here, process.argv[2] ?? process.env.HISTORIES_FOLDER ?? 'v6');
const only = new Set(process.argv.slice(3));
const taskQueue = 'record-histories';
const suffix = randomUUID().slice(0, 8);
const settings = { lateWindow: 'PT3S', factRetention: 'PT2S', settle: 'PT1S' };

const server = await startDevServer({
  port: await freePort(),
  dynamicConfig: ['limit.historyCount.suggestContinueAsNew=300'],
});
const agent = await startTestAgent();
// An agent that answers 500 until it recovers: its lapse deliveries are in retry.
const failing = await startTestAgent();
failing.failNext(500);
// An agent that refuses its first lapse with a 404: a delivery that failed for good, for an admin to re-send.
const refusing = await startTestAgent();
refusing.failNext(404, 1);
// The worker finds the agents' cards in principals, as it does in the principals file; none is in any history.
const watcher = await recorderWorker(server, taskQueue, {
  'shipping-agent': agent.cardUrl,
  'failing-agent': failing.cardUrl,
  'refusing-agent': refusing.cardUrl,
});
const running = watcher.run();
const client: Client = watcher.client;

const secondsFromNow = (s: number) => new Date(Date.now() + s * 1000).toISOString();

function expectation(name: string, dueInSeconds: number, extra: Partial<Expectation> = {}): Expectation {
  return deliveryExpectation(`${name}-${suffix}`, secondsFromNow(dueInSeconds), {
    expects: `the shipment is delivered (${name})`,
    satisfiedBy: { factKey: `shipment:${name}-${suffix}:delivered` },
    ...extra,
  });
}

async function raise(e: Expectation, lineage = 0, agentId = 'shipping-agent', lateWindow = settings.lateWindow): Promise<ExpectationInput> {
  const input: ExpectationInput = {
    expectation: e,
    agent: { id: agentId },
    origin: { taskId: `origin-${suffix}`, contextId: `ctx-${suffix}` },
    lineage,
    links: expectationLinks(e, taskQueue),
    settings: { ...settings, lateWindow },
  };
  await startExpectation(client, taskQueue, input);
  await waitFor(async () => (await client.workflow.getHandle(input.links.self).query('record')) !== undefined);
  return input;
}

const fact = (factKey: string, extra: Partial<Fact> = {}): Fact =>
  keyFact(factKey, { observedAt: new Date().toISOString(), source: 'carrier-feed', ...extra });

// As a bridge stores a fact (one signal per router, received now); recordFact (an update) for `wait=true` below.
const report = (f: Fact) => storeFacts(client, taskQueue, [{ ...f, receivedAt: new Date().toISOString() }], settings);

function waitFor(check: () => Promise<boolean>, timeoutMs = 60_000): Promise<void> {
  return untilTrue(check, { timeoutMs, retryErrors: true });
}

const recorded: Array<{ name: string; workflowId: string }> = [];
const keep = (name: string, workflowId: string) => recorded.push({ name, workflowId });

// Satisfied in time, with a fact on the subject first (stored in its subject's router).
const satisfied = await raise(expectation('satisfied', 60));
await report(fact(`shipment:scan-${suffix}`, { subject: satisfied.expectation.subject }));
await report(fact(satisfied.expectation.satisfiedBy.factKey, { subject: satisfied.expectation.subject }));
keep('expectation-satisfied', satisfied.links.self);
keep('fact-router-satisfied', satisfied.links.factRouter);
keep('fact-router-subject-satisfied', satisfied.links.subjectRouter);

// Early fact: the router started by the fact, then the expectation satisfied at once from it.
const early = expectation('early', 60);
await report(fact(early.satisfiedBy.factKey));
await raise(early);
keep('expectation-early-fact', expectationLinks(early, taskQueue).self);
keep('fact-router-early-fact', factRouterWorkflowId(early.satisfiedBy.factKey, taskQueue));

// Eight waiting on one key: the router forwards the fact to them in one local activity (CLIENT_FORWARDS_FROM).
const manyKey = `shipment:many-${suffix}:delivered`;
const many: ExpectationInput[] = [];
for (let i = 0; i < CLIENT_FORWARDS_FROM; i++)
  many.push(await raise(expectation(`many-${i}`, 60, { satisfiedBy: { factKey: manyKey } })));
await report(fact(manyKey));
keep('fact-router-many-waiting', many[0]!.links.factRouter);

// A fact reported with wait=true: the router names both expectations on the key and holds its signals back; the
// bridge's takeFact satisfies one, and the other (the bridge "died" first) gets the router's signal 10 s later.
const takenKey = `shipment:taken-${suffix}:delivered`;
const taker = await raise(expectation('taker', 60, { satisfiedBy: { factKey: takenKey } }));
const left = await raise(expectation('left', 60, { satisfiedBy: { factKey: takenKey } }));
const takenFact = fact(takenKey);
await recordFactRouted(client, taskQueue, takenFact, settings, { listForwarded: true });
await awaitFactTaken(client, [taker.links.self], takenFact, Date.now() + 10_000);
keep('expectation-fact-taken', taker.links.self);
keep('expectation-fact-held-back', left.links.self);
keep('fact-router-caller-delivers', taker.links.factRouter);

// Overdue after grace, lapse delivered to the agent, then a late fact.
const late = await raise(expectation('late', 1, { grace: 'PT1S' }));
await agent.waitForMessages(1, 30_000);
await recordFact(client, taskQueue, fact(late.expectation.satisfiedBy.factKey), settings);
keep('expectation-overdue-then-late-fact', late.links.self);

// Lapsed and closed at the end of the late window; a horizon with no fact stalls first.
const stalled = await raise(expectation('stalled', 2, { horizon: secondsFromNow(1) }));
keep('expectation-stalled-overdue-late-window', stalled.links.self);

// Anchor satisfied moves its dependent; the dependent then satisfied; a second dependent joins after the anchor closed.
const anchor = await raise(expectation('anchor', 60));
const anchoredOn = (e: ExpectationInput) => ({ anchor: { expectationId: e.expectation.expectationId, offset: 'PT30S' } });
const dependent = await raise(expectation('dependent', 120, anchoredOn(anchor)));
await report(fact(anchor.expectation.satisfiedBy.factKey));
await waitFor(async () => (await client.workflow.getHandle(anchor.links.self).describe()).status.name === 'COMPLETED');
const joiner = await raise(expectation('joiner', 120, anchoredOn(anchor)));
await report(fact(dependent.expectation.satisfiedBy.factKey));
await withdrawExpectation(client, joiner.expectation.expectationId, { reason: 'recorded' });
keep('expectation-anchor', anchor.links.self);
keep('expectation-dependent', dependent.links.self);
keep('expectation-dependent-after-anchor-closed', joiner.links.self);

// Superseded anchor: its dependent follows the replacement; everything withdrawn at the end.
const old = await raise(expectation('old-eta', 60));
const follower = await raise(expectation('follower', 120, anchoredOn(old)));
const replacement = await raise(expectation('new-eta', 60, { supersedes: old.expectation.expectationId }), 1);
await report(fact(replacement.expectation.satisfiedBy.factKey));
await withdrawExpectation(client, follower.expectation.expectationId, { reason: 'recorded' });
keep('expectation-superseded', old.links.self);
keep('expectation-superseding', replacement.links.self);
keep('expectation-follows-superseding-anchor', follower.links.self);

// Skipped: B (after A) satisfied while A is open.
const subject = { type: 'shipment', id: `S-skip-${suffix}` };
const first = await raise(expectation('first', 60, { subject }));
const second = await raise(expectation('second', 60, { subject, after: [first.expectation.expectationId] }));
await report(fact(second.expectation.satisfiedBy.factKey));
await waitFor(async () => agent.received.length >= 3);
await withdrawExpectation(client, first.expectation.expectationId, { reason: 'recorded' });
keep('expectation-skipped', first.links.self);
keep('expectation-satisfied-after', second.links.self);

// A busy subject: its router continues as new, carrying the subject's latest facts; the expectation on it hears none.
const busy = await raise(expectation('busy', 120));
for (let i = 0; i < 400; i++) {
  await report(fact(`shipment:busy-${suffix}:scan-${i}`, { subject: busy.expectation.subject }));
}
await withdrawExpectation(client, busy.expectation.expectationId, { reason: 'recorded' });
keep('expectation-busy', busy.links.self);
keep('fact-router-busy-subject', subjectRouterWorkflowId(busy.expectation.subject, taskQueue));

/** Resolves once the failing agent has refused the lapse of `input` `times` times: its delivery is in retry. */
const refused = (input: ExpectationInput, times: number) => {
  const messageId = lapseMessageId(input.expectation.expectationId, 'overdue', input.expectation.dueAt);
  return waitFor(async () => failing.attempts.filter((attempt) => attempt.messageId === messageId).length >= times);
};

// Abandoned: overdue, its delivery in retry against an agent answering 500, then satisfied: no further attempt.
// A late window longer than the retries: a lapsed expectation past it stops listening and waits for its delivery.
const abandoned = await raise(expectation('abandoned', 1, { grace: 'PT0S' }), 0, 'failing-agent', 'PT10M');
await refused(abandoned, 2);
await report(fact(abandoned.expectation.satisfiedBy.factKey));
await waitFor(async () => (await getExpectationRecord(client, abandoned.expectation.expectationId))?.lapses[0]?.delivery.status === 'abandoned');
keep('expectation-delivery-abandoned', abandoned.links.self);

// Continue-as-new with a delivery in retry: dependents registering push the history past 300 events while the lapse
// is refused; the next run schedules the delivery again, and it is delivered once the agent recovers.
const retrying = await raise(expectation('retrying', 1, { grace: 'PT0S' }), 0, 'failing-agent', 'PT10M');
await refused(retrying, 2);
const continued = async () => {
  const description = await client.workflow.getHandle(retrying.links.self).describe();
  return description.runId !== description.raw.workflowExecutionInfo?.firstRunId;
};
// Dependents that do not exist: each is a signal and a memo upsert; past the bound each is told to withdraw.
for (let i = 0; !(await continued()); i++) {
  if (i >= 3000) throw new Error('the expectation with a delivery in retry never continued as new');
  await client.workflow
    .getHandle(retrying.links.self)
    .signal(registerDependentSignal, { workflowId: `expectation:nobody-${suffix}-${i}` });
}
failing.recover();
await waitFor(async () => (await getExpectationRecord(client, retrying.expectation.expectationId))?.lapses[0]?.delivery.status === 'delivered');
await withdrawExpectation(client, retrying.expectation.expectationId, { reason: 'recorded' });
keep('expectation-continued-with-delivery-in-retry', retrying.links.self);

// Resent: the lapse refused (failed for good), an admin re-sends it and the agent takes it; a second resend answers
// delivered and sends nothing. A late window long enough for both.
const resent = await raise(expectation('resent', 1, { grace: 'PT0S' }), 0, 'refusing-agent', 'PT10M');
const resentStatus = async () => (await getExpectationRecord(client, resent.expectation.expectationId))?.lapses[0]?.delivery.status;
await waitFor(async () => (await resentStatus()) === 'failed');
const resentRequest = {
  messageId: lapseMessageId(resent.expectation.expectationId, 'overdue', resent.expectation.dueAt),
  requestedBy: 'ops',
};
await resendLapse(client, resent.expectation.expectationId, resentRequest);
await waitFor(async () => (await resentStatus()) === 'delivered');
await resendLapse(client, resent.expectation.expectationId, resentRequest);
await withdrawExpectation(client, resent.expectation.expectationId, { reason: 'recorded' });
keep('expectation-lapse-resent', resent.links.self);

// Resent in a carried run's first workflow task: the refused lapse's run is replaced by one carrying its record (as
// continue-as-new does), started in the same request as the resend, so the update comes before its deliveries resume.
refusing.failNext(404, 1);
const carried = await raise(expectation('resent-first-task', 1, { grace: 'PT0S' }), 0, 'refusing-agent', 'PT10M');
const carriedRecord = async () => getExpectationRecord(client, carried.expectation.expectationId);
await waitFor(async () => (await carriedRecord())?.lapses[0]?.delivery.status === 'failed');
const carriedFailed = (await carriedRecord())!;
await client.workflow.getHandle(carried.links.self).terminate('replaced by a run carrying its state');
await client.workflow.executeUpdateWithStart(resendLapseUpdate, {
  args: [{ messageId: lapseMessageId(carried.expectation.expectationId, 'overdue', carried.expectation.dueAt), requestedBy: 'ops' }],
  startWorkflowOperation: new WithStartWorkflowOperation<typeof expectationWorkflow>('expectationWorkflow', {
    workflowId: carried.links.self,
    taskQueue,
    workflowIdConflictPolicy: 'FAIL',
    workflowIdReusePolicy: 'ALLOW_DUPLICATE',
    args: [{ ...carried, carried: { record: carriedFailed, horizonChecked: false, dependents: [] } }],
  }),
});
await waitFor(async () => (await carriedRecord())?.lapses[0]?.delivery.status === 'delivered');
await withdrawExpectation(client, carried.expectation.expectationId, { reason: 'recorded' });
keep('expectation-resent-in-first-task', carried.links.self);

mkdirSync(folder, { recursive: true });
let files = 0;
const routers = new Set<string>();
for (const { name, workflowId } of recorded.filter(({ name }) => only.size === 0 || only.has(name))) {
  const handle = client.workflow.getHandle(workflowId);
  // A fact router never closes, and serves several of the keys above: each router once, at rest (its last task done).
  const router = workflowId.startsWith('facts:');
  if (router && routers.has(workflowId)) continue;
  routers.add(workflowId);
  await waitFor(async () => (router ? atRest(client, workflowId) : (await handle.describe()).status.name === 'COMPLETED'));
  // Every run of the chain, oldest first: a continued-as-new run has its own history.
  const description = await handle.describe();
  let runId: string | undefined = description.raw.workflowExecutionInfo?.firstRunId ?? description.runId;
  for (let run = 0; runId; run++) {
    const history: proto.temporal.api.history.v1.IHistory = await client.workflow.getHandle(workflowId, runId).fetchHistory();
    const file = path.join(folder, `${name}${run === 0 ? '' : `-run${run}`}.json`);
    writeFileSync(file, JSON.stringify(toJson(history)) + '\n');
    files++;
    const continued = history.events?.at(-1)?.workflowExecutionContinuedAsNewEventAttributes;
    runId = continued?.newExecutionRunId ?? undefined;
  }
}
console.log(`wrote ${files} histories to ${folder}`);

await agent.close();
await failing.close();
await refusing.close();
await watcher.shutdown();
await running;
await server.stop();
