// The operator's page: every view reads the bridge's API with the token typed on this tab, and nothing else, so it
// shows no more than that principal may read through the API.
import { api, ApiError, currentRoute, el, formatInstant, formatSeconds, routeTo, token } from './dom.js';
import { renderPlan } from './plan.js';

const STATES = ['open', 'satisfied', 'lapsed', 'withdrawn'];
const view = () => document.getElementById('view');

const views = { find: renderFind, plan: renderPlan, expectation: renderExpectation, statistics: renderStatistics };

async function show() {
  const main = view();
  main.setAttribute('aria-busy', 'true');
  try {
    await showView(main);
  } finally {
    main.setAttribute('aria-busy', 'false');
  }
}

async function showView(main) {
  document.getElementById('sign-out').hidden = !token.get();
  if (!token.get()) return renderLogin();
  const { view: name, params } = currentRoute();
  const render = views[name] ?? renderFind;
  main.replaceChildren(el('p', { class: 'muted' }, 'Loading…'));
  try {
    await render(main, params);
  } catch (error) {
    if (error instanceof ApiError && error.status === 401) return renderLogin(error.message);
    main.replaceChildren(
      el('h1', {}, 'Could not load this view'),
      el('p', { class: 'error', role: 'alert' }, error.message),
    );
  }
}

/** Signs in with the token typed, once the bridge knows it: a principal without read roles is still signed in. */
async function signIn(value) {
  token.set(value);
  try {
    await api('/v1/expectations', { query: { pageSize: '1' } });
  } catch (error) {
    if (!(error instanceof ApiError) || error.status === 401) return renderLogin(error.message);
  }
  await show();
}

function renderLogin(problem) {
  document.getElementById('sign-out').hidden = true;
  const input = el('input', { type: 'password', name: 'token', autocomplete: 'off', required: true });
  const form = el(
    'form',
    {
      class: 'login',
      onsubmit: (event) => {
        event.preventDefault();
        void signIn(input.value.trim());
      },
    },
    el('h1', {}, 'Sign in'),
    el('p', { class: 'muted' }, 'The bearer token of your principal. It is kept for this tab only.'),
    el('label', {}, 'Bearer token', input),
    el('p', {}, el('button', { type: 'submit' }, 'Sign in')),
    problem ? el('p', { class: 'error', role: 'alert' }, problem) : undefined,
  );
  view().replaceChildren(form);
  input.focus();
}

/** A labelled input of the find form, filled from the route. */
function field(params, name, label, attrs = {}) {
  return el('label', {}, label, el('input', { name, value: params.get(name) ?? '', ...attrs }));
}

async function renderFind(root, params) {
  const state = el(
    'select',
    { name: 'state' },
    el('option', { value: '' }, 'any'),
    STATES.map((s) => el('option', { value: s, selected: params.get('state') === s }, s)),
  );
  const form = el(
    'form',
    { class: 'filters', onsubmit: (event) => submitTo('find', event) },
    field(params, 'subjectType', 'Subject type'),
    field(params, 'subjectId', 'Subject id'),
    field(params, 'kind', 'Kind'),
    field(params, 'agent', 'Agent'),
    el('label', {}, 'State', state),
    field(params, 'dueAfter', 'Due at or after', { placeholder: '2026-12-01T00:00:00Z' }),
    field(params, 'dueBefore', 'Due before', { placeholder: '2026-12-31T00:00:00Z' }),
    el('button', { type: 'submit' }, 'Find'),
  );
  root.replaceChildren(el('h1', {}, 'Find expectations'), form);
  if ([...params.keys()].length === 0) return;
  const page = await api('/v1/expectations', { query: { ...Object.fromEntries(params), pageSize: '200' } });
  root.append(resultsTable(page.items), page.nextPageToken ? moreButton(root, params, page.nextPageToken) : '');
}

/** A filter form's submit: its trimmed values become the route of `view`, which renders from them. */
function submitTo(view, event) {
  event.preventDefault();
  const values = [...new FormData(event.target)].map(([name, value]) => [name, String(value).trim()]);
  location.hash = routeTo(view, Object.fromEntries(values));
}

function moreButton(root, params, pageToken) {
  const button = el(
    'button',
    {
      type: 'button',
      onclick: async () => {
        button.remove();
        const query = { ...Object.fromEntries(params), pageSize: '200', pageToken };
        const page = await api('/v1/expectations', { query });
        root.querySelector('table.results tbody').append(...page.items.map(resultRow));
        if (page.nextPageToken) root.append(moreButton(root, params, page.nextPageToken));
      },
    },
    'More',
  );
  return button;
}

function resultsTable(items) {
  if (items.length === 0) return el('p', { class: 'muted' }, 'No expectation matches.');
  const head = ['Expectation', 'Subject', 'Kind', 'State', 'Due', 'Agent'].map((name) => el('th', {}, name));
  return el('table', { class: 'results' }, el('thead', {}, el('tr', {}, head)), el('tbody', {}, items.map(resultRow)));
}

function resultRow(item) {
  const subject = item.subject
    ? el(
        'a',
        { href: routeTo('plan', { subjectType: item.subject.type, subjectId: item.subject.id }) },
        `${item.subject.type}/${item.subject.id}`,
      )
    : '—';
  return el(
    'tr',
    { 'data-expectation-id': item.expectationId },
    el('td', {}, el('a', { href: routeTo('expectation', { id: item.expectationId }) }, item.expectationId)),
    el('td', {}, subject),
    el('td', {}, item.kind ?? '—'),
    el('td', { class: `state state-${item.state}` }, item.state ?? '—', item.late ? ' (late)' : ''),
    el('td', {}, formatInstant(item.dueAt)),
    el('td', {}, item.agent ?? '—'),
  );
}

async function renderExpectation(root, params) {
  const id = params.get('id') ?? '';
  const record = await api(`/v1/expectations/${encodeURIComponent(id)}`);
  const e = record.expectation;
  const planHref = routeTo('plan', { subjectType: e.subject.type, subjectId: e.subject.id });
  const rows = [
    [
      'State',
      el('span', { class: `state state-${record.state}` }, record.state, record.late ? ' (satisfied late)' : ''),
    ],
    ['Kind', e.kind],
    ['Subject', el('a', { href: planHref }, `${e.subject.type}/${e.subject.id}`)],
    ['Expects', e.expects],
    ['Fact key', e.satisfiedBy.factKey],
    ['Raised at', formatInstant(record.raisedAt)],
    ['Due at', formatInstant(record.dueAt)],
    ['Projected due at', formatInstant(record.projectedDueAt)],
    ['Grace', e.grace ?? 'PT0S'],
    ['After', (e.after ?? []).join(', ') || '—'],
    ['Anchor', e.anchor ? `${e.anchor.expectationId} + ${e.anchor.offset}` : '—'],
    ['Satisfied at', formatInstant(record.satisfiedAt)],
    ['Satisfying fact observed', formatInstant(record.satisfiedBy?.observedAt)],
    ['Subject’s latest fact', formatInstant(record.lastFactAt)],
    ['Closed at', formatInstant(record.closedAt)],
    ['Withdrawn because', record.withdrawnReason ?? '—'],
    ['Agent', record.agent.id],
    [
      'Temporal',
      record.links?.temporalUi
        ? el(
            'a',
            { href: record.links.temporalUi, target: '_blank', rel: 'noopener noreferrer' },
            'Open the workflow in the Temporal UI',
          )
        : '—',
    ],
  ];
  root.replaceChildren(
    el('h1', {}, record.expectation.expectationId),
    el(
      'dl',
      { class: 'record' },
      rows.map(([name, value]) => [el('dt', {}, name), el('dd', {}, value)]),
    ),
    el('h2', {}, 'Lapses and deliveries'),
    lapsesTable(record),
  );
}

function lapsesTable(record) {
  if (record.lapses.length === 0) return el('p', { class: 'muted' }, 'No lapse.');
  const head = ['Lapse', 'Lapsed at', 'Delivery', 'Attempts', 'Delivered at', 'Error', ''].map((n) => el('th', {}, n));
  return el(
    'table',
    { class: 'lapses' },
    el('thead', {}, el('tr', {}, head)),
    el(
      'tbody',
      {},
      record.lapses.map((entry) => lapseRow(record, entry)),
    ),
  );
}

function lapseRow(record, entry) {
  const { lapse, delivery } = entry;
  const resendable = delivery.status === 'failed' || delivery.status === 'abandoned';
  const outcome = el('span', { class: 'resend-outcome', role: 'status' });
  const resend = resendable
    ? el(
        'button',
        { type: 'button', onclick: () => resendLapse(record, delivery.messageId, outcome) },
        'Resend (admin)',
      )
    : undefined;
  const resent = delivery.resends ? ` · resent ${delivery.resends}× by ${delivery.resentBy ?? '?'}` : '';
  return el(
    'tr',
    { 'data-message-id': delivery.messageId, 'data-delivery': delivery.status },
    el('td', {}, lapse.lapse),
    el('td', {}, formatInstant(lapse.lapsedAt)),
    el('td', { class: 'delivery' }, delivery.status, resent),
    el('td', {}, delivery.attempts ?? '—'),
    el('td', {}, formatInstant(delivery.deliveredAt)),
    el('td', { class: 'error' }, delivery.error ?? ''),
    el('td', {}, resend, outcome),
  );
}

async function resendLapse(record, messageId, outcome) {
  const id = encodeURIComponent(record.expectation.expectationId);
  try {
    const answer = await api(`/v1/expectations/${id}/lapses/${encodeURIComponent(messageId)}/resend`, {
      method: 'POST',
    });
    outcome.className = 'resend-outcome';
    outcome.textContent =
      answer.result === 'resent' ? 'Resent: the delivery is pending' : `Nothing to resend: ${answer.result}`;
  } catch (error) {
    outcome.className = 'resend-outcome error';
    outcome.textContent = error.message;
  }
}

async function renderStatistics(root, params) {
  const form = el(
    'form',
    {
      class: 'filters',
      onsubmit: (event) => submitTo('statistics', event),
    },
    field(params, 'kind', 'Kind'),
    field(params, 'agent', 'Agent'),
    field(params, 'window', 'Window', { placeholder: 'P7D' }),
    el('button', { type: 'submit' }, 'Show'),
  );
  const answer = await api('/v1/statistics', { query: Object.fromEntries(params) });
  const head = [
    'Kind',
    'Agent',
    'Raised',
    'Open',
    'On time',
    'Late',
    'Withdrawn',
    'Overdue',
    'Skipped',
    'Stalled',
    'Raise → fact p50 / p90 / p99',
    'Fact − due p50 / p90 / p99',
  ].map((n) => el('th', {}, n));
  const triple = (d) => (d.count ? [d.p50, d.p90, d.p99].map(formatSeconds).join(' / ') : '—');
  const rows = answer.items.map((item) =>
    el(
      'tr',
      { 'data-kind': item.kind, 'data-agent': item.agent },
      [
        item.kind,
        item.agent,
        item.raised,
        item.open,
        item.satisfiedOnTime,
        item.satisfiedLate,
        item.withdrawn,
        item.lapsed.overdue,
        item.lapsed.skipped,
        item.lapsed.stalled,
        triple(item.timeToSatisfySeconds),
        triple(item.satisfiedRelativeToDueSeconds),
      ].map((v) => el('td', {}, v)),
    ),
  );
  root.replaceChildren(
    el('h1', {}, 'What each kind actually does'),
    form,
    el(
      'p',
      { class: 'muted' },
      `Raised from ${formatInstant(answer.since)} to ${formatInstant(answer.until)}`,
      answer.truncated ? ' (more than the bound: the latest ones only)' : '',
    ),
    rows.length
      ? el('table', { class: 'statistics' }, el('thead', {}, el('tr', {}, head)), el('tbody', {}, rows))
      : el('p', { class: 'muted' }, 'Nothing raised in this window.'),
  );
}

document.getElementById('sign-out').addEventListener('click', () => {
  token.clear();
  void show();
});
window.addEventListener('hashchange', () => void show());
void show();
