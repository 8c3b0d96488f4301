/**
 * The Temporal UI as an operator uses it, in headless Chromium: filter the workflows by `ExpectationSubject`, open
 * the expectation, read its summary, its static details and its current details (DESIGN 6). The expectation is a
 * real one: raised on the shared dev server, held by our worker, lapsed and delivered to a real SDK agent.
 * Screenshots go to test-output/ui/.
 */
import { randomUUID } from 'node:crypto';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { Expectation } from '../../core/schemas/extension.js';
import type { ExpectationRecord } from '../../core/schemas/record.js';
import { getExpectationRecord } from '../../src/temporal/expectations.js';
import { expectationWorkflowId } from '../../core/ids.js';
import { startTestAgent, type TestAgent } from '../support/agent.js';
import { launchChromium, screenshotPath } from '../support/browser.js';
import { shipmentDelivery, wholeSecondsFromNow } from '../support/fixtures.js';
import { untilRecord } from '../support/poll.js';
import { raiseOn, useWatcherWorker } from '../support/watcher.js';

const taskQueue = `temporal-ui-${randomUUID()}`;
const suffix = randomUUID().slice(0, 8);
const uiUrl = inject('temporalUiUrl');
const watcher = useWatcherWorker(taskQueue);
let agent: TestAgent;
let browser: Browser;
let page: Page;

/** Lapses two seconds after it is raised; the agent gets the lapse task. */
let lapsing: Expectation;
/** Same kind, another subject: the filter must leave it out. */
let elsewhere: Expectation;
let record: ExpectationRecord;

function expectation(id: string, subjectId: string, dueInMs: number): Expectation {
  const expects = 'The shipment is delivered to the consignee';
  return shipmentDelivery(id, subjectId, wholeSecondsFromNow(dueInMs), { expects, grace: 'PT0S' });
}

async function raise(e: Expectation): Promise<void> {
  const origin = { taskId: `task-${suffix}`, contextId: `ctx-${suffix}` };
  await raiseOn(watcher.client, taskQueue, e, { id: 'shipping-agent', cardUrl: agent.cardUrl }, origin);
}

beforeAll(async () => {
  expect(uiUrl, 'the shared dev server runs with its UI').toMatch(/^http:/);
  agent = await startTestAgent();
  lapsing = expectation(`ui-${suffix}`, `S-ui-${suffix}`, 2_000);
  elsewhere = expectation(`ui-other-${suffix}`, `S-other-${suffix}`, 365 * 24 * 3600 * 1000);
  await raise(lapsing);
  await raise(elsewhere);
  await agent.waitForMessages(1, 45_000);
  record = await recordWhen(lapsing.expectationId, (r) => r.lapses[0]?.delivery.status === 'delivered');
  browser = await launchChromium();
  page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
});

afterAll(async () => {
  await browser?.close();
  await agent?.close();
});

/** Polls the record (a query: nothing to subscribe to) until `done` holds. */
const recordWhen = (id: string, done: (r: ExpectationRecord) => boolean, timeoutMs = 30_000) =>
  untilRecord((recordId) => getExpectationRecord(watcher.client, recordId), id, done, { timeoutMs });

const subjectQuery = (e: Expectation) => `ExpectationSubject="${e.subject.type}/${e.subject.id}"`;

/** Opens the workflow list filtered by `query`, reloading until the visibility store has caught up. */
async function openFilteredList(query: string, expectedWorkflowId: string): Promise<void> {
  const url = `${uiUrl}/namespaces/default/workflows?query=${encodeURIComponent(query)}`;
  await expect
    .poll(
      async () => {
        await page.goto(url);
        return page
          .getByRole('link', { name: expectedWorkflowId, exact: true })
          .waitFor({ timeout: 3_000 })
          .then(
            () => true,
            () => false,
          );
      },
      { timeout: 30_000, interval: 500 },
    )
    .toBe(true);
}

/** The text of every markdown block the UI renders (each in its own iframe), in page order. */
async function renderedBlocks(): Promise<string[]> {
  const frames = await page.locator('iframe[title="output"]').all();
  return Promise.all(frames.map((frame) => frame.contentFrame().locator('body').innerText()));
}

describe('the Temporal UI in Chromium', () => {
  it('lists only the expectations of one subject when filtered by ExpectationSubject', async () => {
    await openFilteredList(subjectQuery(lapsing), expectationWorkflowId(lapsing.expectationId));

    await page.screenshot({ path: screenshotPath('filtered-by-subject') });
    const chip = page.getByRole('button', { name: /ExpectationSubject/ }).first();
    expect((await chip.innerText()).replace(/\s+/g, ' ')).toBe(subjectQuery(lapsing).replace('=', ' = '));
    expect(
      await page.getByRole('link', { name: expectationWorkflowId(lapsing.expectationId), exact: true }).count(),
    ).toBe(1);
    expect(
      await page.getByRole('link', { name: expectationWorkflowId(elsewhere.expectationId), exact: true }).count(),
    ).toBe(0);
  });

  it('shows the opened expectation’s summary, static details and current details (lapsed, delivered)', async () => {
    await openFilteredList(subjectQuery(lapsing), expectationWorkflowId(lapsing.expectationId));
    await page.getByRole('link', { name: expectationWorkflowId(lapsing.expectationId), exact: true }).click();
    await page.getByTestId('user-metadata-tab').click();

    const summary = `delivery: ${lapsing.expects} (due ${lapsing.dueAt})`;
    await expect
      .poll(renderedBlocks, { timeout: 20_000 })
      .toEqual(
        expect.arrayContaining([
          summary,
          expect.stringMatching(new RegExp(`expectationId\\s+${lapsing.expectationId}`)),
          expect.stringMatching(/^lapsed · due /),
        ]),
      );
    await page.screenshot({ path: screenshotPath('expectation-user-metadata'), fullPage: true });
    const current = (await renderedBlocks()).find((text) => text.startsWith('lapsed'))!;
    expect(current).toContain('overdue');
    expect(current).toContain('delivered');
    expect(current).toContain(record.lapses[0]!.lapseTaskId!);
    expect(await page.getByRole('heading', { name: expectationWorkflowId(lapsing.expectationId) }).count()).toBe(1);
  });
});
