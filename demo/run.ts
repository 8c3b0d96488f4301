/**
 * `npm run demo`: the watcher keeping time for a shipping agent that keeps no clock, in about a minute.
 *
 * 1. A user asks the demo agent (a real A2A agent) to ship S-…; the agent's answer carries a plan of three steps
 *    (pickup → transit → delivery, each `after` the one before and anchored on it), which it delivers to the
 *    watcher's bridge (`POST /a2a/events`).
 * 2. The carrier feed reports the pickup to the watcher's own A2A endpoint; the transit step is re-anchored on it.
 * 3. Nobody reports the transit in time: it lapses, and the agent receives the lapse task in the user's context.
 * 4. The transit is reported late; the records, the plan on the operator's page and the Temporal UI links to look at
 *    are printed.
 *
 * The agent, the carrier and the operator build and read the extension's objects with `expectations-watcher/client`
 * (src/client/), as an agent author would.
 *
 * Starts what it needs: the embedded Temporal dev server (or uses TEMPORAL_ADDRESS), the worker and the bridge on
 * free ports, a demo task queue. `--keep` leaves everything running (for the UI) until Ctrl-C.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Role, type Message, type Task } from '@a2a-js/sdk';
import { ClientFactory, withA2AExtensions, type ServiceParameters } from '@a2a-js/sdk/client';
import { tokenSha256 } from '../src/auth/principals.js';
import { loadConfig } from '../src/config.js';
import { createLogger } from '../src/logger.js';
import { installTelemetry } from '../src/observability/telemetry.js';
import { startBridge, startWorker, type Running } from '../src/runtime.js';
import {
  EXTENSION_URI,
  expectation,
  fact,
  WatcherClient,
  withExtension,
  type Expectation,
  type Lapse,
} from 'expectations-watcher/client';
import { startDevServer } from '../dev/temporal/dev-server.js';
import { freePort } from '../test/support/net.js';
import { startDemoAgent } from './agent.js';

const keep = process.argv.includes('--keep');
const started = Date.now();
const say = (line = '') => process.stdout.write(`${line}\n`);
const step = (line: string) => say(`[+${((Date.now() - started) / 1000).toFixed(1).padStart(4)}s] ${line}`);
/** `HH:MM:SS` today, `YYYY-MM-DD HH:MM:SS` otherwise (UTC). */
const clock = (iso: string) =>
  iso.slice(0, 10) === new Date().toISOString().slice(0, 10)
    ? iso.slice(11, 19)
    : `${iso.slice(0, 10)} ${iso.slice(11, 19)}`;
/** An instant `ms` from now, whole seconds, as the extension writes it. */
const inMs = (ms: number) => new Date(Math.ceil((Date.now() + ms) / 1000) * 1000).toISOString().replace('.000Z', 'Z');

async function until<T>(what: string, read: () => Promise<T | undefined>, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`demo: timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

/**
 * The agent's plan for a shipment: pickup in 12 s; transit 15 s after the pickup; delivery 2 days after transit.
 * Built with the client's `expectation()`, which checks each step as the watcher will.
 */
function planFor(shipmentId: string, runId: string): Expectation[] {
  const id = (name: string) => `${shipmentId}-${name}-${runId}`;
  const subject = { type: 'shipment', id: shipmentId };
  const factKey = (name: string) => `shipment/${shipmentId}/${name}`;
  return [
    expectation({
      expectationId: id('pickup'),
      kind: 'pickup',
      subject,
      expects: 'The carrier picks the shipment up',
      satisfiedBy: { factKey: factKey('picked-up') },
      dueAt: inMs(12_000),
      grace: 'PT0S',
      basis: 'observed',
    }),
    expectation({
      expectationId: id('transit'),
      kind: 'transit',
      subject,
      expects: 'The shipment leaves the origin hub',
      satisfiedBy: { factKey: factKey('in-transit') },
      dueAt: inMs(27_000),
      grace: 'PT0S',
      after: [id('pickup')],
      anchor: { expectationId: id('pickup'), offset: 'PT15S' },
      basis: 'contract',
    }),
    expectation({
      expectationId: id('delivery'),
      kind: 'delivery',
      subject,
      expects: 'The consignee receives the shipment',
      satisfiedBy: { factKey: factKey('delivered') },
      dueAt: inMs(2 * 24 * 3600_000 + 27_000),
      after: [id('transit')],
      anchor: { expectationId: id('transit'), offset: 'P2D' },
      basis: 'contract',
    }),
  ];
}

async function main(): Promise<void> {
  const log = createLogger(process.env.WATCHER_LOG_LEVEL ?? 'warn', 'demo');
  installTelemetry({ metricsPort: 0, log });
  const dir = mkdtempSync(path.join(os.tmpdir(), 'watcher-demo-'));
  const runId = randomUUID().slice(0, 6);
  const shipmentId = `S-${runId.toUpperCase()}`;
  const pieces: Running[] = [{ stop: async () => rmSync(dir, { recursive: true, force: true }) }];
  const stopAll = async () => {
    for (const piece of pieces.splice(0)) await piece.stop().catch(() => undefined);
  };

  try {
    say('expectations-watcher demo: a shipping agent that keeps no clock, and the watcher that keeps it for it');
    say();

    // ── the watcher ───────────────────────────────────────────────────────────────────────────────────────────
    let address = process.env.TEMPORAL_ADDRESS;
    let uiUrl = process.env.TEMPORAL_UI_URL;
    if (!address) {
      step('starting the embedded Temporal dev server (in memory, with its UI)');
      const server = await startDevServer({
        port: await freePort(),
        uiPort: await freePort(),
        logFile: path.join(dir, 'temporal.log'),
      });
      pieces.unshift({ stop: () => server.stop() });
      address = server.address;
      uiUrl = server.uiUrl;
    }
    const tokens = {
      agent: randomBytes(16).toString('hex'),
      carrier: randomBytes(16).toString('hex'),
      ops: randomBytes(16).toString('hex'),
    };
    const bridgePort = await freePort();
    const watcherUrl = `http://127.0.0.1:${bridgePort}`;

    let lapseArrived: (value: { lapse: Lapse; message: Message; taskId: string }) => void = () => undefined;
    const lapseTask = new Promise<{ lapse: Lapse; message: Message; taskId: string }>(
      (resolve) => (lapseArrived = resolve),
    );
    const agent = await startDemoAgent({
      watcher: { url: watcherUrl, token: tokens.agent },
      planFor: (id) => planFor(id, runId),
      onPlanDelivered: (result, taskId) =>
        step(`agent → watcher (POST /a2a/events, artifact of task ${taskId}): ${JSON.stringify(result)}`),
      onLapse: (lapse, message, taskId) => lapseArrived({ lapse, message, taskId }),
    });
    pieces.unshift({ stop: () => agent.close() });

    const principalsFile = path.join(dir, 'principals.json');
    writeFileSync(
      principalsFile,
      JSON.stringify({
        principals: [
          {
            id: 'demo-shipping-agent',
            tokenSha256: tokenSha256(tokens.agent),
            roles: ['agent'],
            agent: { cardUrl: agent.cardUrl },
          },
          { id: 'carrier-feed', tokenSha256: tokenSha256(tokens.carrier), roles: ['reporter'] },
          { id: 'ops', tokenSha256: tokenSha256(tokens.ops), roles: ['reader', 'admin'] },
        ],
      }),
    );
    const config = loadConfig({
      ...process.env,
      TEMPORAL_ADDRESS: address,
      TEMPORAL_TASK_QUEUE: `demo-${runId}`,
      PORT: String(bridgePort),
      WATCHER_PRINCIPALS_FILE: principalsFile,
      WATCHER_DATA_DIR: dir,
      WATCHER_CARD_CACHE_SECONDS: '0',
      WATCHER_WORKER_METRICS_PORT: '0',
      // The demo agent runs on this machine: loopback, which a worker on a cluster reaches only when allowed.
      WATCHER_OUTBOUND_ALLOW: 'loopback',
    });
    step('starting the worker (it bundles the workflows first: a few seconds) and the bridge');
    pieces.unshift(await startWorker(config, address, log));
    pieces.unshift(await startBridge(config, address, log, uiUrl));
    say(`         Temporal ${address}${process.env.TEMPORAL_ADDRESS ? '' : ' (embedded)'}, UI ${uiUrl ?? '(none)'}`);
    say(`         bridge ${watcherUrl}, the watcher's agent card ${watcherUrl}/.well-known/agent-card.json`);
    say(`         demo agent ${agent.url}, task queue ${config.temporal.taskQueue}`);
    say();

    // The operator reads records with the client (GET /v1/expectations/{id}); a refusal throws a WatcherProblemError.
    const ops = new WatcherClient({ baseUrl: watcherUrl, token: tokens.ops });
    const read = (id: string) => ops.getExpectation(id);
    const [pickup, transit, delivery] = planFor(shipmentId, runId).map((e) => e.expectationId) as [
      string,
      string,
      string,
    ];

    // ── 1. the user asks the agent; the agent raises its plan with the watcher ─────────────────────────────────
    const contextId = `conversation-${runId}`;
    step(`user → agent (A2A SendMessage): ship ${shipmentId}`);
    const agentClient = await new ClientFactory().createFromUrl(agent.url);
    const planned = (await agentClient.sendMessage({
      tenant: '',
      message: {
        messageId: randomUUID(),
        contextId,
        taskId: '',
        role: Role.ROLE_USER,
        parts: [
          {
            content: { $case: 'data', value: { shipmentId } },
            metadata: undefined,
            filename: '',
            mediaType: 'application/json',
          },
        ],
        metadata: undefined,
        extensions: [],
        referenceTaskIds: [],
      },
      configuration: undefined,
      metadata: undefined,
    })) as Task;
    const planText = planned.artifacts[0]?.parts[0]?.content;
    step(`agent → user: task ${planned.id}, artifact "plan":`);
    if (planText?.$case === 'text') for (const line of planText.value.split('\n')) say(`           ${line}`);
    for (const id of [pickup, transit, delivery]) {
      const record = await read(id);
      const e = record.expectation;
      const relation = e.anchor ? ` (after ${e.after?.join(', ')}; ${e.anchor.offset} after it is satisfied)` : '';
      say(`           ${id}: ${record.state}, due ${clock(record.dueAt)}${relation}`);
    }
    say();

    // ── 2. the carrier reports the pickup to the watcher's A2A endpoint ────────────────────────────────────────
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    const watcherClient = await new ClientFactory().createFromUrl(watcherUrl);
    const report = async (what: string) => {
      const parameters: ServiceParameters = { Authorization: `Bearer ${tokens.carrier}` };
      withA2AExtensions(EXTENSION_URI)(parameters);
      const observedAt = new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
      const receipt = (await watcherClient.sendMessage(
        {
          tenant: '',
          // The fact under metadata[URI] of the SDK's Message, put there (and checked) by the client's builders.
          message: withExtension(
            {
              messageId: randomUUID(),
              contextId: `carrier-${runId}`,
              taskId: '',
              role: Role.ROLE_USER,
              // A2A requires a part; the fact itself is under metadata[URI].
              parts: [
                {
                  content: { $case: 'text', value: `${shipmentId}: ${what}` },
                  metadata: undefined,
                  filename: '',
                  mediaType: 'text/plain',
                },
              ],
              metadata: undefined,
              extensions: [],
              referenceTaskIds: [],
            },
            {
              facts: [
                fact({
                  factKey: `shipment/${shipmentId}/${what}`,
                  observedAt,
                  subject: { type: 'shipment', id: shipmentId },
                }),
              ],
            },
          ),
          configuration: undefined,
          metadata: undefined,
        },
        { serviceParameters: parameters },
      )) as Task;
      const text = receipt.status?.message?.parts[0]?.content;
      step(
        `carrier feed → watcher (A2A SendMessage) ${what} observed ${clock(observedAt)}: ${text?.$case === 'text' ? text.value : JSON.stringify(receipt.status)}`,
      );
    };
    await report('picked-up');
    const reanchored = await until('the transit step to follow its anchor', async () => {
      const record = await read(transit);
      return record.dueAt !== record.projectedDueAt ? record : undefined;
    });
    step(
      `watcher: ${pickup} satisfied; ${transit} now due ${clock(reanchored.dueAt)} (pickup + 15 s; projected ${clock(reanchored.projectedDueAt)})`,
    );
    say();

    // ── 3. nobody reports the transit: it lapses and the agent gets the lapse task ─────────────────────────────
    step(`waiting for ${clock(reanchored.dueAt)}: nobody reports the transit…`);
    const received = await Promise.race([
      lapseTask,
      new Promise<never>((_, reject) => setTimeout(() => reject(new Error('demo: no lapse task within 60 s')), 60_000)),
    ]);
    step(`watcher → agent (A2A SendMessage): lapse task ${received.taskId}`);
    const { message } = received;
    say(
      `           contextId ${message.contextId} (the user's conversation), referenceTaskIds [${message.referenceTaskIds.join(', ')}] (the plan's task)`,
    );
    for (const part of message.parts) {
      if (part.content?.$case === 'text') say(`           text: ${part.content.value}`);
      if (part.content?.$case === 'data') say(`           data: ${JSON.stringify(part.content.value)}`);
    }
    say();

    // ── 4. the transit is reported late ────────────────────────────────────────────────────────────────────────
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    await report('in-transit');
    const late = await until('the transit step to be satisfied', async () => {
      const record = await read(transit);
      return record.state === 'satisfied' ? record : undefined;
    });
    step(
      `watcher: ${transit} satisfied late (late: ${String(late.late)}); its lapse task was ${late.lapses[0]?.lapseTaskId} (${late.lapses[0]?.delivery.status})`,
    );
    const next = await read(delivery);
    step(`watcher: ${delivery} now due ${clock(next.dueAt)} (transit + P2D)`);
    say();

    // ── what to look at ────────────────────────────────────────────────────────────────────────────────────────
    say('Records (GET /v1/expectations/{id}):');
    for (const id of [pickup, transit, delivery]) {
      const record = await read(id);
      const lapses =
        record.lapses.map((entry) => `${entry.lapse.lapse} → ${entry.delivery.status}`).join(', ') || 'none';
      say(`  ${id.padEnd(28)} ${record.state.padEnd(10)} due ${record.dueAt}  lapses: ${lapses}`);
    }
    say();
    // The page's route for a subject's plan, as src/ui/dom.js routeTo writes it: `#/plan?subjectType=…&subjectId=…`.
    const plan = new URLSearchParams({ subjectType: 'shipment', subjectId: shipmentId });
    say(`On the operator's page (the bridge's /ui/; sign in with the ops token ${tokens.ops}):`);
    say(`  the shipment's plan: ${watcherUrl}/ui/#/plan?${plan.toString()}`);
    if (uiUrl) {
      const query = encodeURIComponent(`ExpectationSubject="shipment/${shipmentId}"`);
      say(
        'In the Temporal UI (each expectation is a workflow; open "User Metadata" for its summary and current details):',
      );
      say(`  the shipment's steps: ${uiUrl}/namespaces/${config.temporal.namespace}/workflows?query=${query}`);
      for (const id of [pickup, transit, delivery]) say(`  ${id}: ${(await read(id)).links?.temporalUi ?? ''}`);
    }
    if (!keep) {
      const stopping = process.env.TEMPORAL_ADDRESS ? 'the bridge stops' : 'the bridge and the embedded server stop';
      say(`  (${stopping} with the demo: run \`npm run demo -- --keep\` to browse these)`);
    }
    say();

    if (keep) {
      say('Everything keeps running: Ctrl-C stops it.');
      await new Promise<void>((resolve) => {
        process.once('SIGINT', () => resolve());
        process.once('SIGTERM', () => resolve());
      });
    }
    step('stopping');
  } finally {
    await stopAll();
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error instanceof Error ? error.message : error);
    process.exit(1);
  },
);
