/**
 * The operator's page (`/ui/`) in headless Chromium against a real watcher: a plan raised through the bridge by an
 * agent whose lapses a real @a2a-js/sdk agent receives (an anchor, a skip, a late fact, a failed delivery that an
 * admin resends from the page). Each view is asserted on what it shows; screenshots of each go to docs/ui/.
 */
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { WatcherClient, type ExpectationRecord } from 'expectations-watcher/client';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Expectation } from '../../core/types.js';
import { expectationWorkflowId } from '../../core/ids.js';
import { lapsesFor, startTestAgent, type TestAgent } from '../support/agent.js';
import { artifactUpdate, startBridgeApp, UI_URL, unique, type BridgeApp } from '../support/bridge.js';
import { launchChromium } from '../support/browser.js';
import { deliveryExpectation, wholeSecondsFromNow } from '../support/fixtures.js';
import { until } from '../support/poll.js';
import { useWatcherWorker } from '../support/watcher.js';

const taskQueue = `operator-ui-${unique()}`;
const watcher = useWatcherWorker(taskQueue);
const agentId = `ui-agent-${unique()}`;
const subject = { type: 'shipment', id: `S-plan-${unique()}` };
let agent: TestAgent;
let bridge: BridgeApp;
let browser: Browser;

const HOUR = 3_600_000;
const step = (name: string, kind: string, dueInMs: number, extra: Partial<Expectation> = {}): Expectation =>
  deliveryExpectation(`${name}-${unique()}`, wholeSecondsFromNow(dueInMs), {
    kind,
    basis: kind === 'pickup' ? 'observed' : 'contract',
    subject,
    grace: 'PT0S',
    satisfiedBy: { factKey: `shipment/${subject.id}/${name}` },
    ...extra,
  });

// The plan: P picked up on time re-anchors D; K is satisfied while H, which it comes after, is open (H skipped);
// L lapses and its delivery fails for good; M lapses, then a late fact satisfies it.
const P = step('pickup', 'pickup', HOUR);
const D = step('deliver', 'delivery', 5 * HOUR, { anchor: { expectationId: P.expectationId, offset: 'PT2H' } });
const H = step('handover', 'pickup', HOUR);
const K = step('customs', 'delivery', 3 * HOUR, { after: [H.expectationId] });
const L = step('notify', 'delivery', 2_000);
const M = step('sign', 'delivery', 8_000);
const plan = [P, D, H, K, L, M];

const client = (principal: string) => new WatcherClient({ baseUrl: bridge.url, token: bridge.tokens[principal]! });
const fact = (e: Expectation) => ({ factKey: e.satisfiedBy.factKey, observedAt: new Date().toISOString(), subject });

/** Reads the record (as the agent, through the bridge) until `accept` holds. */
const recordWhen = (e: Expectation, accept: (record: ExpectationRecord) => boolean) =>
  until(() => client(agentId).getExpectation(e.expectationId), accept, {
    timeoutMs: 45_000,
    describe: (last) => `${e.expectationId}: ${JSON.stringify(last)}`,
  });

/** docs/ui/<name>.png: the screenshots the docs show. */
function docsScreenshot(name: string): string {
  const dir = path.resolve('docs', 'ui');
  mkdirSync(dir, { recursive: true });
  return path.join(dir, `${name}.png`);
}

beforeAll(async () => {
  agent = await startTestAgent({
    kinds: [
      { kind: 'delivery', subjectType: 'shipment', basis: 'contract', describes: 'The shipment is delivered' },
      { kind: 'pickup', subjectType: 'shipment', basis: 'observed', describes: 'The carrier picks it up' },
    ],
  });
  bridge = await startBridgeApp(
    watcher.client,
    taskQueue,
    [
      { id: agentId, roles: ['agent'], cardUrl: agent.cardUrl },
      { id: 'ui-other-agent', roles: ['agent'], cardUrl: agent.cardUrl },
      { id: 'ui-admin', roles: ['reader', 'admin'] },
      { id: 'ui-reader', roles: ['reader'] },
    ],
    { temporalUiUrl: UI_URL },
  );
  agent.failNext(404, 1);
  const raised = await client(agentId).sendEvent(artifactUpdate({ expectations: plan }));
  expect(raised.expectations.map((item) => item.result)).toEqual(plan.map(() => 'raised'));
  await client(agentId).reportFacts([fact(P)]);
  await recordWhen(L, (r) => r.lapses[0]?.delivery.status === 'failed');
  await client(agentId).reportFacts([fact(K)]);
  await recordWhen(M, (r) => r.lapses[0]?.delivery.status === 'delivered');
  await client(agentId).reportFacts([fact(M)]);
  await recordWhen(M, (r) => r.state === 'satisfied');
  await recordWhen(H, (r) => r.lapses[0]?.delivery.status === 'delivered');
  browser = await launchChromium();
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await bridge?.close();
  await agent?.close();
});

/** A tab signed in as `principal`: the token typed in the page's form. */
async function signedIn(principal: string): Promise<Page> {
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  await page.goto(`${bridge.url}/ui/`);
  await page.getByLabel('Bearer token').fill(bridge.tokens[principal]!);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Find expectations' }).waitFor();
  return page;
}

/** Opens `hash` until `ready` holds: the visibility store is eventually consistent, as in the Temporal UI. */
async function openUntil(page: Page, hash: string, ready: () => Promise<boolean>): Promise<void> {
  await expect
    .poll(
      async () => {
        await page.goto(`${bridge.url}/ui/${hash}`);
        await page.reload();
        await page.locator('main[aria-busy="false"]').waitFor();
        return ready();
      },
      { timeout: 30_000, interval: 500 },
    )
    .toBe(true);
}

const ids = (page: Page, selector: string) =>
  page.locator(selector).evaluateAll((rows) => rows.map((row) => row.getAttribute('data-expectation-id')));
const sorted = (list: Expectation[]) => list.map((e) => e.expectationId).sort();
const subjectHash = (extra = '') => `#/find?subjectType=shipment&subjectId=${encodeURIComponent(subject.id)}${extra}`;

describe('the operator page', () => {
  it('asks for a token, keeps it for the tab only, and finds by subject, kind, state, agent and due range', async () => {
    const page = await signedIn('ui-admin');
    expect(await page.evaluate<string[]>('Object.keys(sessionStorage)')).toEqual(['expectations-watcher.token']);
    expect(await page.evaluate<string[]>('Object.keys(localStorage)')).toEqual([]);

    const rows = () => ids(page, 'table.results tbody tr');
    await openUntil(page, subjectHash(), async () => (await rows()).length === plan.length);
    expect((await rows()).sort()).toEqual(sorted(plan));
    await page.screenshot({ path: docsScreenshot('find'), fullPage: true });

    await openUntil(page, subjectHash('&kind=pickup'), async () => (await rows()).length === 2);
    expect((await rows()).sort()).toEqual(sorted([P, H]));
    await openUntil(page, subjectHash('&state=satisfied'), async () => (await rows()).length === 3);
    expect((await rows()).sort()).toEqual(sorted([P, K, M]));
    await openUntil(page, subjectHash(`&agent=${agentId}`), async () => (await rows()).length === plan.length);
    await openUntil(page, subjectHash('&agent=ui-other-agent'), async () =>
      page.getByText('No expectation matches.').isVisible(),
    );
    const soon = encodeURIComponent(new Date(Date.now() + 60_000).toISOString());
    await openUntil(page, subjectHash(`&dueBefore=${soon}`), async () => (await rows()).length === 2);
    expect((await rows()).sort()).toEqual(sorted([L, M]));

    // The form writes the same route.
    await page.goto(`${bridge.url}/ui/#/`);
    await page.getByLabel('Subject type').fill('shipment');
    await page.getByLabel('Subject id').fill(subject.id);
    await page.getByLabel('State').selectOption('lapsed');
    await page.getByRole('button', { name: 'Find' }).click();
    await expect.poll(async () => (await rows()).sort()).toEqual(sorted([H, L]));
    await page.close();
  });

  it('draws the plan: bars by state, the projected due, facts, lapses with their delivery, late, after and anchor links', async () => {
    const page = await signedIn('ui-admin');
    // Chromium reports what the page's Content-Security-Policy refused (an inline style, a script) on the console.
    const refused: string[] = [];
    page.on('console', (message) => {
      if (/Content Security Policy/i.test(message.text())) refused.push(message.text());
    });
    const bars = () => ids(page, 'svg g.row');
    const planHash = `#/plan?subjectType=shipment&subjectId=${encodeURIComponent(subject.id)}`;
    await openUntil(page, planHash, async () => (await bars()).length === plan.length);
    const row = (e: Expectation) => page.locator(`svg g.row[data-expectation-id="${e.expectationId}"]`);
    const attribute = (e: Expectation, name: string) => row(e).getAttribute(name);

    expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe(`Plan of shipment/${subject.id}`);
    const states = Object.fromEntries(
      await Promise.all(plan.map(async (e) => [e.expectationId, await attribute(e, 'data-state')])),
    );
    expect(states).toEqual({
      [P.expectationId]: 'satisfied',
      [D.expectationId]: 'open',
      [H.expectationId]: 'lapsed',
      [K.expectationId]: 'satisfied',
      [L.expectationId]: 'lapsed',
      [M.expectationId]: 'satisfied',
    });
    expect(await attribute(H, 'data-lapses')).toBe('skipped:delivered');
    expect(await attribute(L, 'data-lapses')).toBe('overdue:failed');
    expect(await attribute(M, 'data-lapses')).toBe('overdue:delivered');
    expect(await attribute(M, 'data-late')).toBe('true');
    expect(await attribute(K, 'data-late')).toBeNull();
    expect(await row(L).locator('text.note').textContent()).toBe('overdue · failed');
    expect(await row(H).locator('text.note').textContent()).toBe('skipped · delivered');
    expect(await row(M).locator('text.note').textContent()).toBe('overdue · delivered · late');
    expect(await row(K).locator('text.note').count()).toBe(0);
    // D was re-anchored on P's fact: its projected due is drawn beside the current one; the others have none.
    expect(await row(D).locator('path.projected').count()).toBe(1);
    expect(await page.locator('svg path.projected').count()).toBe(1);
    for (const e of [P, K, M]) expect(await row(e).locator('line.fact.satisfying').count()).toBe(1);
    expect(await row(D).locator('line.fact.satisfying').count()).toBe(0);
    const link = (type: string, from: Expectation, to: Expectation) =>
      page.locator(`path[data-link="${type}"][data-from="${from.expectationId}"][data-to="${to.expectationId}"]`);
    expect(await link('after', H, K).count()).toBe(1);
    expect(await link('anchor', P, D).count()).toBe(1);
    expect(await page.locator('path[data-link]').count()).toBe(2);
    const workflowHref = await row(L).locator('a.workflow-link').getAttribute('href');
    expect(workflowHref).toBe(
      `${UI_URL}/namespaces/default/workflows/${encodeURIComponent(expectationWorkflowId(L.expectationId))}`,
    );
    // The Temporal UI opens in a tab that gets no handle on this one, and no referrer.
    expect(await row(L).locator('a.workflow-link').getAttribute('rel')).toBe('noopener noreferrer');
    // The legend's swatches take their colours from classes: no inline style, which the policy refuses.
    expect(await page.locator('[style]').count()).toBe(0);
    const swatches = await page.evaluate<string[]>(
      "[...document.querySelectorAll('.legend .swatch')].map((node) => getComputedStyle(node).backgroundColor)",
    );
    expect(swatches).toHaveLength(5);
    for (const colour of swatches) expect(colour).not.toBe('rgba(0, 0, 0, 0)');
    expect(refused).toEqual([]);
    const table = page.locator(`table.plan tr[data-expectation-id="${D.expectationId}"] td`);
    const cells = await table.allTextContents();
    const record = await client('ui-admin').getExpectation(D.expectationId);
    expect(cells.slice(4, 6)).toEqual([record.dueAt, record.projectedDueAt].map(shownInstant));
    expect(record.dueAt).not.toBe(record.projectedDueAt);
    await page.screenshot({ path: docsScreenshot('plan'), fullPage: true });
    await page.close();
  });

  it('shows one expectation and lets an admin resend its failed lapse: the agent gets it, the page says delivered', async () => {
    const page = await signedIn('ui-admin');
    await page.goto(`${bridge.url}/ui/#/expectation?id=${encodeURIComponent(L.expectationId)}`);
    const lapseRow = page.locator('table.lapses tbody tr');
    await lapseRow.first().waitFor();
    expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe(L.expectationId);
    expect(await lapseRow.getAttribute('data-delivery')).toBe('failed');
    expect(await lapseRow.locator('td.error').textContent()).toContain('404');
    const temporalLink = page.getByRole('link', { name: 'Open the workflow in the Temporal UI' });
    expect(await temporalLink.getAttribute('rel')).toBe('noopener noreferrer');
    await page.screenshot({ path: docsScreenshot('expectation-failed'), fullPage: true });

    await page.getByRole('button', { name: 'Resend (admin)' }).click();
    await expect.poll(() => page.locator('.resend-outcome').textContent()).toBe('Resent: the delivery is pending');
    await until(
      async () => lapsesFor(agent, L.expectationId).length,
      (count) => count === 1,
    );
    await expect
      .poll(
        async () => {
          await page.reload();
          await lapseRow.first().waitFor();
          return lapseRow.getAttribute('data-delivery');
        },
        { timeout: 30_000, interval: 500 },
      )
      .toBe('delivered');
    expect(await lapseRow.locator('td.delivery').textContent()).toBe('delivered · resent 1× by ui-admin');
    expect(await page.getByRole('button', { name: 'Resend (admin)' }).count()).toBe(0);
    await page.screenshot({ path: docsScreenshot('expectation'), fullPage: true });
    await page.close();
  });

  it('adds nothing a principal may not read: another agent finds none of it and is refused the record', async () => {
    const page = await signedIn('ui-other-agent');
    await page.goto(`${bridge.url}/ui/${subjectHash()}`);
    await page.getByText('No expectation matches.').waitFor();
    await page.goto(`${bridge.url}/ui/#/expectation?id=${encodeURIComponent(L.expectationId)}`);
    await page.getByRole('alert').waitFor();
    expect(await page.getByRole('alert').textContent()).toBe(
      `expectation '${L.expectationId}' was raised by another agent`,
    );
    await page.goto(`${bridge.url}/ui/#/find?agent=${agentId}`);
    await page.getByRole('alert').waitFor();
    expect(await page.getByRole('alert').textContent()).toContain(
      `may list its own expectations only, not agent '${agentId}'`,
    );

    // A reader reads every agent's records.
    const reader = await signedIn('ui-reader');
    await reader.goto(`${bridge.url}/ui/#/expectation?id=${encodeURIComponent(H.expectationId)}`);
    await reader.locator('table.lapses tbody tr').waitFor();
    expect(await reader.locator('table.lapses tbody tr').getAttribute('data-delivery')).toBe('delivered');

    // A wrong token is forgotten and the sign-in asked again.
    const stranger = await browser.newPage();
    await stranger.goto(`${bridge.url}/ui/`);
    await stranger.getByLabel('Bearer token').fill('not-a-token');
    await stranger.getByRole('button', { name: 'Sign in' }).click();
    await stranger.getByRole('alert').waitFor();
    expect(await stranger.getByRole('alert').textContent()).toBe('the bearer token names no principal');
    expect(await stranger.evaluate<string[]>('Object.keys(sessionStorage)')).toEqual([]);
    for (const p of [page, reader, stranger]) await p.close();
  });

  it('shows what each kind actually does, the figures of GET /v1/statistics', async () => {
    const page = await signedIn('ui-admin');
    const row = page.locator(`table.statistics tr[data-kind="delivery"][data-agent="${agentId}"] td`);
    const expected = ['delivery', agentId, '4', '1', '1', '1', '0', '1', '0', '0'];
    await expect
      .poll(
        async () => {
          await page.goto(`${bridge.url}/ui/#/statistics?agent=${agentId}&window=PT1H`);
          await page.reload();
          await page.locator('main[aria-busy="false"]').waitFor();
          return (await row.allTextContents()).slice(0, 10);
        },
        { timeout: 75_000, interval: 2_000 },
      )
      .toEqual(expected);
    const pickup = page.locator(`table.statistics tr[data-kind="pickup"][data-agent="${agentId}"] td`);
    expect((await pickup.allTextContents()).slice(0, 10)).toEqual([
      'pickup',
      agentId,
      '2',
      '0',
      '1',
      '0',
      '0',
      '0',
      '1',
      '0',
    ]);
    await page.screenshot({ path: docsScreenshot('statistics'), fullPage: true });
    await page.close();
  });
});

/** An instant as the page writes it. */
const shownInstant = (value: string) => new Date(value).toISOString().replace('T', ' ').slice(0, 19) + 'Z';

describe('the operator page at its bounds', () => {
  // A subject holds at most 45 open expectations of one agent: four rounds of 40 raised and satisfied, one left open.
  const crowded = { type: 'shipment', id: `S-crowded-${unique()}`.padEnd(256, 'x') };
  const base = unique();
  const longId = (k: number) => `${String(k).padStart(3, '0')}-${base}-`.padEnd(256, 'i');
  const many = Array.from({ length: 200 }, (_, k) =>
    deliveryExpectation(longId(k), wholeSecondsFromNow(HOUR + k * 60_000), {
      subject: crowded,
      grace: 'PT30M',
      satisfiedBy: { factKey: `crowded/${base}/${k}` },
      ...(k % 10 !== 0 ? { after: [longId(k - 1)] } : {}),
    }),
  );

  beforeAll(async () => {
    const agentClient = client(agentId);
    for (let first = 0; first < many.length; first += 40) {
      const round = many.slice(first, first + 40);
      const raised = await agentClient.sendEvent(artifactUpdate({ expectations: round }));
      expect(raised.expectations.filter((item) => item.result === 'raised')).toHaveLength(round.length);
      if (first + 40 >= many.length) break;
      const observedAt = new Date().toISOString();
      await agentClient.reportFacts(
        round.map((e) => ({ factKey: e.satisfiedBy.factKey, observedAt, subject: crowded })),
      );
      // The bridge counts a subject's open expectations from the visibility store: the next round waits for it.
      await until(
        () =>
          agentClient.listExpectations({
            subjectType: crowded.type,
            subjectId: crowded.id,
            state: 'satisfied',
            pageSize: 1000,
          }),
        (page) => page.items.length === first + 40,
        { timeoutMs: 60_000 },
      );
    }
  }, 300_000);

  it('stays readable with 200 expectations on one subject and ids at their 256-character bound', async () => {
    const page = await signedIn('ui-admin');
    const planHash = `#/plan?subjectType=shipment&subjectId=${encodeURIComponent(crowded.id)}`;
    await openUntil(page, planHash, async () => (await ids(page, 'svg g.row')).length === 200);

    expect(await page.locator('table.plan tbody tr').count()).toBe(200);
    expect(await page.locator('path[data-link="after"]').count()).toBe(180);
    expect(await page.locator('svg g.row[data-state="satisfied"]').count()).toBe(160);
    // Labels are cut to fit their column (the whole id in the tooltip and the table); the page scrolls only down.
    const labels = await page.locator('svg g.row a.label text').allTextContents();
    expect(Math.max(...labels.map((label) => label.length))).toBeLessThanOrEqual(46);
    const overflow = await page.evaluate<number>('document.documentElement.scrollWidth - window.innerWidth');
    expect(overflow).toBeLessThanOrEqual(0);
    const box = await page.locator('svg g.row').first().locator('a.label').boundingBox();
    expect(box!.width).toBeLessThan(330);
    await page.screenshot({ path: docsScreenshot('plan-200'), fullPage: false });
    await page.close();
  });
});
