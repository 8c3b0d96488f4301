/**
 * The operator page's own arithmetic (src/ui/dom.js, plain browser JavaScript): due + grace drawn where the watcher
 * lapses, and instants and seconds written as the page shows them.
 */
import { describe, expect, it } from 'vitest';
import { addDuration as watcherAdds } from '../../../../core/duration.js';
// @ts-expect-error: browser JavaScript without declarations; the page's module as the browser loads it
import { addDuration, formatInstant, formatSeconds, shorten } from '../../../../src/ui/dom.js';

describe('the page adds a grace as the watcher does', () => {
  const instants = ['2026-01-31T10:00:00Z', '2024-02-29T23:59:59.500Z', '2026-12-05T00:00:00Z'];
  const durations = ['PT0S', 'PT6H', 'P1D', 'P1M', 'P1Y', 'P1Y1M1W1DT1H1M1S', 'PT1.5H', 'P0,5D', 'PT90M', 'P13M'];

  it.each(instants.flatMap((instant) => durations.map((duration) => [instant, duration])))(
    '%s + %s',
    (instant, duration) => {
      expect((addDuration(instant, duration) as Date).getTime()).toBe(watcherAdds(Date.parse(instant), duration));
    },
  );

  it('reads no grace as none, and gives nothing for what is not a duration', () => {
    expect((addDuration('2026-12-05T00:00:00Z', undefined) as Date).toISOString()).toBe('2026-12-05T00:00:00.000Z');
    expect(addDuration('2026-12-05T00:00:00Z', 'six hours')).toBeUndefined();
    expect(addDuration('2026-12-05T00:00:00Z', 'P')).toBeUndefined();
  });
});

describe('what the page writes', () => {
  it('writes instants to the second in UTC, and a dash for none', () => {
    expect(formatInstant('2026-12-05T14:03:09.987+01:00')).toBe('2026-12-05 13:03:09Z');
    expect(formatInstant(undefined)).toBe('—');
  });

  it('writes seconds in the unit a person reads', () => {
    expect([42, -90, 600, 9000, 400_000, undefined].map(formatSeconds)).toEqual([
      '42 s',
      '-90 s',
      '10.0 min',
      '2.5 h',
      '4.6 d',
      '—',
    ]);
  });

  it('cuts long text to its bound with an ellipsis', () => {
    expect(shorten('x'.repeat(256), 46)).toBe(`${'x'.repeat(45)}…`);
    expect(shorten('short', 46)).toBe('short');
  });
});
