/**
 * Encryption at rest as an operator meets it in the Temporal UI, in headless Chromium: an expectation
 * whose payloads the watcher sealed, shown encrypted by a UI without a codec endpoint (the shared dev server's) and
 * by one whose codec endpoint refuses the browser (not signed in), then readable (input, summary, details) once the
 * operator has signed in at the bridge's `/codec/login` and turned on "Include cross-origin credentials" in the UI's
 * Codec Server settings. The second UI is a dev server of this file's own, started with `--ui-codec-endpoint`
 * pointing at a real bridge; the bridge's answers to the UI's codec calls are recorded. Screenshots go to
 * test-output/ui/.
 */
import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import express from 'express';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createPrincipalStore } from '../../src/auth/principals.js';
import { createApp } from '../../src/http/app.js';
import type { Expectation } from '../../core/schemas/extension.js';
import { startDevServer, type DevServer } from '../../dev/temporal/dev-server.js';
import { startExpectation } from '../../src/temporal/expectations.js';
import { expectationLinks, expectationWorkflowId } from '../../core/ids.js';
import { ENCRYPTED_ENCODING } from '../../src/temporal/encryption-codec.js';
import { principalsFileOf, registerAgent, registerAgents } from '../support/agents.js';
import { launchChromium, screenshotPath } from '../support/browser.js';
import { randomCodec } from '../support/codec.js';
import { deliveryExpectation, expectationInput } from '../support/fixtures.js';
import { close, freePort } from '../support/net.js';
import { startWatcherWorker, type RunningWatcher } from '../support/watcher.js';

const taskQueue = `ui-codec-${randomUUID()}`;
const suffix = randomUUID().slice(0, 8);
const codec = randomCodec(['ui-key']);
const readerToken = `ops-reader-${randomUUID()}`;
/** How the UI shows the encoding of an undecoded payload: its metadata value in base64. */
const ENCRYPTED_BASE64 = Buffer.from(ENCRYPTED_ENCODING).toString('base64');

let server: DevServer;
let watcher: RunningWatcher;
let bridge: Server;
let bridgeUrl: string;
/** What the bridge answered the UI's codec calls: `POST /codec/decode 401 cookie:false`. */
const codecAnswers: string[] = [];
let browser: Browser;
/** Raised through the codec on this file's dev server, and a twin on the shared one (no worker needed to show it). */
let secret: Expectation;
let twin: Expectation;
let sharedClient: Client;

function expectation(id: string): Expectation {
  return deliveryExpectation(id, '2027-06-01T00:00:00Z', {
    subject: { type: 'shipment', id: `S-private-${id}` },
    expects: `The parcel reaches Ms. Confidential ${id}`,
  });
}

beforeAll(async () => {
  const bridgePort = await freePort();
  bridgeUrl = `http://127.0.0.1:${bridgePort}`;
  server = await startDevServer({
    port: await freePort(),
    uiPort: await freePort(),
    uiCodecEndpoint: `${bridgeUrl}/codec`,
    logFile: path.resolve('test-output', 'ui-codec-dev-server.log'),
  });
  watcher = await startWatcherWorker(taskQueue, { address: server.address, dataConverter: { payloadCodecs: [codec] } });
  const principals = createPrincipalStore(
    principalsFileOf([{ id: 'ops-reader', roles: ['reader'] }], { 'ops-reader': readerToken }),
  );
  registerAgents(taskQueue, principals);
  const app = createApp({
    client: watcher.client,
    taskQueue,
    namespace: 'default',
    principals,
    settings: { factRetention: 'P7D', lateWindow: 'P30D', maxLineage: 10, cardCacheSeconds: 0 },
    codec: { codec, corsOrigins: [server.uiUrl!] },
  });
  const recorded = express();
  recorded.use('/codec', (req, res, next) => {
    res.on('finish', () =>
      codecAnswers.push(
        `${req.method} ${req.originalUrl.split('?')[0]} ${res.statusCode} cookie:${req.get('cookie') !== undefined}`,
      ),
    );
    next();
  });
  recorded.use(app);
  bridge = await new Promise<Server>((resolve) => {
    const listening = recorded.listen(bridgePort, '127.0.0.1', () => resolve(listening));
  });

  secret = expectation(`ui-codec-${suffix}`);
  const origin = { taskId: `task-${suffix}`, contextId: `ctx-${suffix}` };
  await startExpectation(
    watcher.client,
    taskQueue,
    expectationInput(
      secret,
      registerAgent(taskQueue, { id: 'shipping-agent', cardUrl: 'http://127.0.0.1:1/card' }),
      origin,
      taskQueue,
    ),
  );

  // The same sealing client on the shared dev server, whose UI has no codec endpoint; no worker polls its queue.
  sharedClient = new Client({
    connection: Connection.lazy({ address: inject('temporalAddress') }),
    dataConverter: { payloadCodecs: [codec] },
  });
  twin = expectation(`ui-codec-twin-${suffix}`);
  await startExpectation(
    sharedClient,
    `${taskQueue}-unpolled`,
    expectationInput(twin, { id: 'shipping-agent' }, origin, `${taskQueue}-unpolled`),
  );

  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
  if (twin) {
    const links = expectationLinks(twin, `${taskQueue}-unpolled`);
    for (const id of [links.self, links.factRouter, links.subjectRouter]) {
      await sharedClient.workflow
        .getHandle(id)
        .terminate('test over')
        .catch(() => undefined);
    }
  }
  await sharedClient?.connection.close();
  if (bridge) await close(bridge);
  await watcher?.stop();
  await server?.stop();
});

const workflowPage = (uiUrl: string, e: Expectation) =>
  `${uiUrl}/namespaces/default/workflows/${encodeURIComponent(expectationWorkflowId(e.expectationId))}`;

/** A browser profile of its own (cookies, the UI's local settings), with a tall viewport: the settings panel fits. */
async function freshPage(): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext({ viewport: { width: 1400, height: 1400 } });
  return { context, page: await context.newPage() };
}

const bodyText = (page: Page) => page.locator('body').innerText();

/** The text of every markdown block of the User Metadata tab (each in its own iframe). */
async function userMetadataBlocks(page: Page): Promise<string[]> {
  const frames = await page.locator('iframe[title="output"]').all();
  return Promise.all(frames.map((frame) => frame.contentFrame().locator('body').innerText()));
}

describe('the Temporal UI and an encrypted expectation', () => {
  it('without a codec endpoint (the shared dev server’s UI): the input is shown sealed, nothing of it readable', async () => {
    const { context, page } = await freshPage();

    await page.goto(workflowPage(inject('temporalUiUrl'), twin));
    await expect.poll(() => bodyText(page), { timeout: 30_000 }).toContain(ENCRYPTED_BASE64);

    await page.screenshot({ path: screenshotPath('codec-none-input'), fullPage: true });
    const text = await bodyText(page);
    expect(text).toContain('"encryption-key-id"');
    expect(text).not.toContain(twin.expects);
    expect(text).not.toContain(twin.subject.id);
    expect(await page.getByTestId('data-encoder-status-configured').count()).toBe(0);
    await context.close();
  });

  it('with the codec endpoint but not signed in: the bridge refuses the browser (401) and the input stays sealed', async () => {
    const { context, page } = await freshPage();
    codecAnswers.length = 0;

    await page.goto(workflowPage(server.uiUrl!, secret));
    await expect.poll(() => bodyText(page), { timeout: 30_000 }).toContain('Codec Server could not connect');
    await expect.poll(() => bodyText(page), { timeout: 10_000 }).toContain(ENCRYPTED_BASE64);
    await page.getByTestId('user-metadata-tab').click();
    // Not 'networkidle': the UI polls the workflow, so on a busy machine the network is never idle for long.
    await expect.poll(() => bodyText(page), { timeout: 30_000 }).toContain('No summary available');

    await page.screenshot({ path: screenshotPath('codec-refused-user-metadata'), fullPage: true });
    expect(codecAnswers).toContain('POST /codec/decode 401 cookie:false');
    expect(codecAnswers.filter((answer) => answer.startsWith('POST') && !answer.includes(' 401 '))).toEqual([]);
    const text = await bodyText(page);
    expect(text).toContain('No summary available');
    expect(text).toContain('Decoding failed'); // the timer's summary
    expect(text).not.toContain(secret.expects);
    expect((await userMetadataBlocks(page)).join('\n')).not.toContain(secret.expects);
    await context.close();
  });

  it('signed in at /codec/login with “Include cross-origin credentials”: input, summary and details are readable', async () => {
    const { context, page } = await freshPage();
    // The operator signs this browser in at the bridge with a reader's token...
    await page.goto(`${bridgeUrl}/codec/login`);
    await page.locator('input[name="token"]').fill(readerToken);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect.poll(() => bodyText(page)).toContain('Signed in to the codec endpoint');
    // ...then, in the UI's Codec Server settings, uses the browser setting: the endpoint and credentials.
    await page.goto(workflowPage(server.uiUrl!, secret));
    await page
      .getByTestId('data-encoder-status-error')
      .or(page.getByTestId('data-encoder-status-configured'))
      .first()
      .click();
    await page.getByTestId('override-accordion').click();
    await page.getByText('Use my browser setting and ignore Cluster-level setting.').click();
    await page.locator('#data-encoder-endpoint-input').fill(`${bridgeUrl}/codec`);
    // By keyboard: the UI's sticky top bar lies over the lower half of the settings panel and takes the clicks.
    await page.locator('#pass-access-credentials').focus();
    await page.keyboard.press('Space');
    expect(await page.locator('#pass-access-credentials').isChecked()).toBe(true);
    await page.getByTestId('confirm-data-encoder-button').focus();
    await page.keyboard.press('Enter');
    codecAnswers.length = 0;

    await page.reload();
    await expect.poll(() => bodyText(page), { timeout: 30_000 }).toContain(secret.expects);
    await page.screenshot({ path: screenshotPath('codec-decoded-input'), fullPage: true });
    const input = await bodyText(page);
    await page.getByTestId('user-metadata-tab').click();
    await expect
      .poll(() => userMetadataBlocks(page), { timeout: 20_000 })
      .toEqual(
        expect.arrayContaining([
          `delivery: ${secret.expects} (due ${secret.dueAt})`,
          expect.stringMatching(new RegExp(`subject\\s+shipment/${secret.subject.id}`)),
          expect.stringMatching(/^open · due /),
        ]),
      );

    await page.screenshot({ path: screenshotPath('codec-decoded-user-metadata'), fullPage: true });
    expect(input).toContain(`"id": "${secret.subject.id}"`);
    expect(input).not.toContain(ENCRYPTED_BASE64);
    expect(codecAnswers).toContain('POST /codec/decode 200 cookie:true');
    expect(codecAnswers.filter((answer) => answer.startsWith('POST') && !answer.includes(' 200 '))).toEqual([]);
    expect(await page.getByTestId('data-encoder-status-success').count()).toBe(1);
    await context.close();
  });
});
