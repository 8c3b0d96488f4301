// What every view uses: elements built from data (text only, never markup), the API with the tab's token, durations.

const TOKEN_KEY = 'expectations-watcher.token';

/** An HTML element; `attrs` set as attributes (`on*` functions as listeners), children appended as text or nodes. */
export function el(tag, attrs = {}, ...children) {
  return build(document.createElement(tag), attrs, children);
}

/** An SVG element, as `el`. */
export function svg(tag, attrs = {}, ...children) {
  return build(document.createElementNS('http://www.w3.org/2000/svg', tag), attrs, children);
}

function build(node, attrs, children) {
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === false || value === null) continue;
    if (typeof value === 'function') node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value === true ? '' : String(value));
  }
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    node.append(typeof child === 'string' || typeof child === 'number' ? String(child) : child);
  }
  return node;
}

/** The token typed on this tab (sessionStorage: gone when the tab closes). */
export const token = {
  get: () => sessionStorage.getItem(TOKEN_KEY) ?? '',
  set: (value) => sessionStorage.setItem(TOKEN_KEY, value),
  clear: () => sessionStorage.removeItem(TOKEN_KEY),
};

/** An answer other than 2xx: the problem document's detail and its field errors. */
export class ApiError extends Error {
  constructor(status, problem) {
    const fields = (problem?.errors ?? []).map((e) => `${e.path}: ${e.message}`).join('; ');
    super([problem?.detail ?? problem?.title ?? `HTTP ${status}`, fields].filter(Boolean).join(' — '));
    this.status = status;
  }
}

/** Calls the bridge's API as the tab's principal; a 401 forgets the token. */
export async function api(path, { method = 'GET', query } = {}) {
  const url = new URL(path, location.origin);
  for (const [name, value] of Object.entries(query ?? {})) if (value) url.searchParams.set(name, value);
  const response = await fetch(url, { method, headers: { authorization: `Bearer ${token.get()}` } });
  const body = await response.json().catch(() => undefined);
  if (response.status === 401) token.clear();
  if (!response.ok) throw new ApiError(response.status, body);
  return body;
}

/** `#/view?a=b` as `{ view, params }`. */
export function currentRoute() {
  const [path, search = ''] = location.hash.replace(/^#\/?/, '').split('?');
  return { view: path || 'find', params: new URLSearchParams(search) };
}

/** The hash of a view with its parameters (empty ones left out). */
export function routeTo(view, params = {}) {
  const search = new URLSearchParams(Object.entries(params).filter(([, value]) => value));
  const text = search.toString();
  return `#/${view}${text ? `?${text}` : ''}`;
}

const DURATION =
  /^P(?!$)(?:(\d+)Y)?(?:(\d+)M)?(?:(\d+(?:[.,]\d+)?)W)?(?:(\d+(?:[.,]\d+)?)D)?(?:T(?!$)(?:(\d+(?:[.,]\d+)?)H)?(?:(\d+(?:[.,]\d+)?)M)?(?:(\d+(?:[.,]\d+)?)S)?)?$/;

/**
 * `instant` plus an ISO 8601 duration as the watcher adds it: years and months on the UTC calendar (the day clamped to
 * the month's last), then the exact units. Undefined for a duration it cannot read.
 */
export function addDuration(instant, duration) {
  const match = DURATION.exec(duration ?? 'PT0S');
  if (!match) return undefined;
  const [, years, months, weeks, days, hours, minutes, seconds] = match.map((part) =>
    Number((part ?? '0').replace(',', '.')),
  );
  const start = new Date(instant);
  const monthIndex = start.getUTCFullYear() * 12 + start.getUTCMonth() + years * 12 + months;
  const year = Math.floor(monthIndex / 12);
  const month = monthIndex - year * 12;
  const day = Math.min(start.getUTCDate(), new Date(Date.UTC(year, month + 1, 0)).getUTCDate());
  const timeOfDay = start.getTime() - Date.UTC(start.getUTCFullYear(), start.getUTCMonth(), start.getUTCDate());
  const exact = ((((weeks * 7 + days) * 24 + hours) * 60 + minutes) * 60 + seconds) * 1000;
  return new Date(Date.UTC(year, month, day) + timeOfDay + Math.round(exact));
}

/** An instant as `2026-12-05 14:03:09Z`, or an em dash. */
export const formatInstant = (value) =>
  value ? new Date(value).toISOString().replace('T', ' ').slice(0, 19) + 'Z' : '—';

/** Seconds as `42 s`, `3.5 min`, `2.1 h`, `4.0 d`. */
export function formatSeconds(value) {
  if (value === undefined) return '—';
  const abs = Math.abs(value);
  if (abs < 120) return `${Math.round(value)} s`;
  if (abs < 7200) return `${(value / 60).toFixed(1)} min`;
  if (abs < 172_800) return `${(value / 3600).toFixed(1)} h`;
  return `${(value / 86_400).toFixed(1)} d`;
}

/** At most `max` characters, the rest an ellipsis (the whole text goes in a tooltip beside it). */
export const shorten = (text, max) => (text.length > max ? `${text.slice(0, max - 1)}…` : text);

/** Runs `work` on every item, `limit` at a time, in order of the items. */
export async function mapLimited(items, limit, work) {
  const results = new Array(items.length);
  let next = 0;
  const lane = async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await work(items[index], index);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane));
  return results;
}
