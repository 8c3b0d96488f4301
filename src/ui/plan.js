// A subject's plan as a timeline: a bar per expectation from its raise to due + grace, the projected due, the facts,
// the lapses with their delivery, and the `after` and anchor links between the bars.
import { addDuration, api, el, formatInstant, mapLimited, routeTo, shorten, svg } from './dom.js';

const LABEL_WIDTH = 330;
const CHART_WIDTH = 900;
const RIGHT_MARGIN = 170;
const ROW_HEIGHT = 24;
const AXIS_HEIGHT = 34;
const MAX_EXPECTATIONS = 2000;

export async function renderPlan(root, params) {
  const subject = { type: params.get('subjectType') ?? '', id: params.get('subjectId') ?? '' };
  const summaries = await listSubject(subject);
  const records = await mapLimited(summaries, 8, (item) =>
    api(`/v1/expectations/${encodeURIComponent(item.expectationId)}`),
  );
  const rows = records.map(rowOf).sort((a, b) => a.due - b.due || a.id.localeCompare(b.id));
  const counts = Object.entries(Object.groupBy(rows, (row) => row.record.state)).map(([s, r]) => `${r.length} ${s}`);
  root.replaceChildren(
    el('h1', {}, `Plan of ${subject.type}/${subject.id}`),
    el(
      'p',
      { class: 'muted plan-summary' },
      `${rows.length} expectations`,
      counts.length ? `: ${counts.join(', ')}` : '',
    ),
    legend(),
    rows.length
      ? el('div', { class: 'timeline' }, timeline(rows))
      : el('p', { class: 'muted' }, 'No expectation on this subject.'),
    rows.length ? planTable(rows) : '',
  );
}

async function listSubject(subject) {
  const items = [];
  let pageToken;
  do {
    const query = { subjectType: subject.type, subjectId: subject.id, pageSize: '1000', pageToken };
    const page = await api('/v1/expectations', { query });
    items.push(...page.items);
    pageToken = page.nextPageToken;
  } while (pageToken && items.length < MAX_EXPECTATIONS);
  return items;
}

/** What the timeline draws of one record, its instants in milliseconds. */
function rowOf(record) {
  const e = record.expectation;
  const due = Date.parse(record.dueAt);
  return {
    id: e.expectationId,
    record,
    raised: Date.parse(record.raisedAt),
    due,
    deadline: addDuration(record.dueAt, e.grace)?.getTime() ?? due,
    projected: Date.parse(record.projectedDueAt),
    satisfying: record.satisfiedBy ? Date.parse(record.satisfiedBy.observedAt) : undefined,
    latestFact: record.lastFactAt ? Date.parse(record.lastFactAt) : undefined,
  };
}

function legend() {
  // A class per colour (ui.css): the page's policy allows no inline style.
  const swatch = (name, text) => el('span', {}, el('span', { class: `swatch swatch-${name}` }), text);
  return el(
    'div',
    { class: 'legend' },
    swatch('open', 'open'),
    swatch('satisfied', 'satisfied'),
    swatch('lapsed', 'lapsed'),
    swatch('withdrawn', 'withdrawn'),
    swatch('late', 'late (outline)'),
    el('span', {}, 'pale end: grace · ◇ projected due · green tick: satisfying fact · black tick: latest fact'),
    el('span', {}, '● lapse (with its delivery) · solid arrow: after · dashed arrow: anchor'),
  );
}

function timeline(rows) {
  const instants = rows.flatMap((r) => [r.raised, r.deadline, r.projected, r.satisfying, r.latestFact]);
  const lapses = rows.flatMap((r) => r.record.lapses.map((entry) => Date.parse(entry.lapse.lapsedAt)));
  const known = [...instants, ...lapses, Date.now()].filter((t) => Number.isFinite(t));
  const start = Math.min(...known);
  const span = Math.max(Math.max(...known) - start, 60_000);
  const x = (t) => LABEL_WIDTH + ((t - start) / span) * CHART_WIDTH;
  const y = (index) => AXIS_HEIGHT + index * ROW_HEIGHT + ROW_HEIGHT / 2;
  const height = AXIS_HEIGHT + rows.length * ROW_HEIGHT + 10;
  const width = LABEL_WIDTH + CHART_WIDTH + RIGHT_MARGIN;
  const indexOf = new Map(rows.map((row, index) => [row.id, index]));
  return svg(
    'svg',
    { width, height, viewBox: `0 0 ${width} ${height}`, role: 'img', 'aria-label': 'plan timeline' },
    svg('defs', {}, arrowHead()),
    axis(start, span, x, height),
    rows.map((row, index) => bar(row, x, y(index))),
    rows.map((row, index) => links(row, index, indexOf, rows, x, y)),
  );
}

function arrowHead() {
  return svg(
    'marker',
    { id: 'arrow', viewBox: '0 0 8 8', refX: 7, refY: 4, markerWidth: 7, markerHeight: 7, orient: 'auto' },
    svg('path', { d: 'M0,0 L8,4 L0,8 z', fill: '#6b4fbb' }),
  );
}

function axis(start, span, x, height) {
  const ticks = Array.from({ length: 6 }, (_, k) => start + (span * k) / 5);
  return svg(
    'g',
    { class: 'axis' },
    ticks.map((t, k) => [
      svg('line', { class: 'grid', x1: x(t), x2: x(t), y1: AXIS_HEIGHT - 6, y2: height }),
      svg('text', { x: x(t), y: 14, 'text-anchor': k === 0 ? 'start' : k === 5 ? 'end' : 'middle' }, tickLabel(t)),
    ]),
    svg('line', { class: 'now', x1: x(Date.now()), x2: x(Date.now()), y1: AXIS_HEIGHT - 10, y2: height }),
    svg('text', { x: x(Date.now()), y: 28, 'text-anchor': 'middle' }, 'now'),
  );
}

/** `12-06 02:33Z`: an axis tick, short enough that six fit. */
const tickLabel = (t) => formatInstant(t).slice(5, 16) + 'Z';

/** What a row ends with, after due + grace: its lapses and their delivery, and a late satisfaction. */
function note(record) {
  const lapses = record.lapses.map((entry) => `${entry.lapse.lapse} · ${entry.delivery.status}`);
  return [...lapses, record.late ? 'late' : ''].filter(Boolean).join(' · ');
}

function bar(row, x, y) {
  const { record } = row;
  const state = record.state;
  const lapses = record.lapses.map((entry) => `${entry.lapse.lapse}:${entry.delivery.status}`);
  const barStart = x(row.raised);
  const dueX = Math.max(x(row.due), barStart + 2);
  const deadlineX = Math.max(x(row.deadline), dueX);
  const workflowLink = record.links?.temporalUi;
  const rect = [
    svg('rect', {
      class: `bar bar-${state}${record.late ? ' late' : ''}`,
      x: barStart,
      y: y - 7,
      width: dueX - barStart,
      height: 14,
      rx: 2,
    }),
    deadlineX > dueX
      ? svg('rect', { class: `grace bar-${state}`, x: dueX, y: y - 7, width: deadlineX - dueX, height: 14 })
      : '',
    svg(
      'title',
      {},
      `${row.id}: raised ${formatInstant(row.raised)}, due ${formatInstant(row.due)}, grace until ${formatInstant(row.deadline)}`,
    ),
  ];
  return svg(
    'g',
    {
      class: 'row',
      'data-expectation-id': row.id,
      'data-state': state,
      'data-late': record.late ? 'true' : undefined,
      'data-lapses': lapses.join(' ') || undefined,
    },
    svg(
      'a',
      { href: routeTo('expectation', { id: row.id }), class: 'label' },
      svg('text', { x: 6, y: y + 4 }, shorten(`${row.id} · ${record.expectation.kind}`, 46)),
      svg('title', {}, `${row.id} (${record.expectation.kind})`),
    ),
    workflowLink
      ? svg('a', { href: workflowLink, target: '_blank', rel: 'noopener noreferrer', class: 'workflow-link' }, rect)
      : svg('g', {}, rect),
    row.projected !== row.due ? projectedMark(x(row.projected), y, row.projected) : '',
    row.latestFact !== undefined && row.latestFact !== row.satisfying
      ? factTick(x(row.latestFact), y, 'latest', row.latestFact)
      : '',
    row.satisfying !== undefined ? factTick(x(row.satisfying), y, 'satisfying', row.satisfying) : '',
    note(record) ? svg('text', { class: 'note', x: deadlineX + 8, y: y + 4 }, note(record)) : '',
    record.lapses.map((entry) => lapseMark(entry, x, y)),
  );
}

function projectedMark(px, y, at) {
  return svg(
    'path',
    { class: 'projected', d: `M${px},${y - 8} L${px + 6},${y} L${px},${y + 8} L${px - 6},${y} z` },
    svg('title', {}, `projected due ${formatInstant(at)}`),
  );
}

function factTick(px, y, which, at) {
  return svg(
    'line',
    { class: `fact ${which}`, x1: px, x2: px, y1: y - 10, y2: y + 10 },
    svg(
      'title',
      {},
      `${which === 'satisfying' ? 'satisfying fact' : 'latest fact on the subject'} observed ${formatInstant(at)}`,
    ),
  );
}

function lapseMark(entry, x, y) {
  const px = x(Date.parse(entry.lapse.lapsedAt));
  const text = `${entry.lapse.lapse} · ${entry.delivery.status}`;
  return svg(
    'g',
    { class: 'lapse-mark', 'data-lapse': entry.lapse.lapse, 'data-delivery': entry.delivery.status },
    svg(
      'circle',
      { class: 'lapse', cx: px, cy: y, r: 5 },
      svg('title', {}, `${text} at ${formatInstant(entry.lapse.lapsedAt)}`),
    ),
  );
}

/** The arrows into this row: from each `after` predecessor's due, and from its anchor. */
function links(row, index, indexOf, rows, x, y) {
  const e = row.record.expectation;
  const arrow = (fromIndex, fromX, toX, type) =>
    svg('path', {
      class: `link ${type}`,
      'data-link': type,
      'data-from': rows[fromIndex].id,
      'data-to': row.id,
      'marker-end': 'url(#arrow)',
      d: `M${fromX},${y(fromIndex)} C${fromX + 30},${y(fromIndex)} ${toX - 30},${y(index)} ${toX},${y(index)}`,
    });
  const after = (e.after ?? [])
    .filter((id) => indexOf.has(id))
    .map((id) => arrow(indexOf.get(id), x(rows[indexOf.get(id)].due), x(row.raised), 'after'));
  const anchorIndex = e.anchor ? indexOf.get(e.anchor.expectationId) : undefined;
  const anchor =
    anchorIndex === undefined
      ? []
      : [arrow(anchorIndex, x(rows[anchorIndex].satisfying ?? rows[anchorIndex].due), x(row.due), 'anchor')];
  return [...after, ...anchor];
}

function planTable(rows) {
  const head = [
    'Expectation',
    'Kind',
    'State',
    'Raised',
    'Due',
    'Projected due',
    'Due + grace',
    'Satisfying fact',
    'Lapses',
  ];
  return el(
    'table',
    { class: 'plan' },
    el(
      'thead',
      {},
      el(
        'tr',
        {},
        head.map((name) => el('th', {}, name)),
      ),
    ),
    el(
      'tbody',
      {},
      rows.map((row) =>
        el(
          'tr',
          { 'data-expectation-id': row.id },
          el('td', {}, el('a', { href: routeTo('expectation', { id: row.id }) }, row.id)),
          el('td', {}, row.record.expectation.kind),
          el('td', { class: `state state-${row.record.state}` }, row.record.state, row.record.late ? ' (late)' : ''),
          el('td', {}, formatInstant(row.raised)),
          el('td', {}, formatInstant(row.due)),
          el('td', {}, formatInstant(row.projected)),
          el('td', {}, formatInstant(row.deadline)),
          el('td', {}, formatInstant(row.satisfying)),
          el(
            'td',
            {},
            row.record.lapses.map((entry) => `${entry.lapse.lapse} (${entry.delivery.status})`).join(', ') || '—',
          ),
        ),
      ),
    ),
  );
}
