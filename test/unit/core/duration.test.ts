import { ApplicationFailure } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { addDuration, addDurationIso, isZeroDuration, parseDuration } from '../../../core/duration.js';
import { INVALID_DURATION } from '../../../core/failures.js';

const at = (iso: string) => Date.parse(iso);

describe('addDuration', () => {
  it('adds exact units: weeks, days, hours, minutes, seconds', () => {
    expect(addDurationIso('2026-03-01T00:00:00Z', 'P2W')).toBe('2026-03-15T00:00:00.000Z');
    expect(addDurationIso('2026-03-01T00:00:00Z', 'P90DT6H')).toBe('2026-05-30T06:00:00.000Z');
    expect(addDurationIso('2026-03-01T00:00:00Z', 'PT1H30M15S')).toBe('2026-03-01T01:30:15.000Z');
  });

  it('adds fractional seconds, with a dot or a comma', () => {
    expect(addDuration(at('2026-01-01T00:00:00Z'), 'PT0.25S')).toBe(at('2026-01-01T00:00:00.250Z'));
    expect(addDuration(at('2026-01-01T00:00:00Z'), 'PT1,5S')).toBe(at('2026-01-01T00:00:01.500Z'));
  });

  it('adds months in the UTC calendar, clamping to the end of a shorter month', () => {
    expect(addDurationIso('2026-01-31T10:00:00Z', 'P1M')).toBe('2026-02-28T10:00:00.000Z');
    expect(addDurationIso('2028-01-31T10:00:00Z', 'P1M')).toBe('2028-02-29T10:00:00.000Z');
    expect(addDurationIso('2026-08-15T00:00:00Z', 'P6M')).toBe('2027-02-15T00:00:00.000Z');
  });

  it('adds years in the calendar (a leap day becomes Feb 28)', () => {
    expect(addDurationIso('2028-02-29T00:00:00Z', 'P1Y')).toBe('2029-02-28T00:00:00.000Z');
    expect(addDurationIso('2026-05-01T00:00:00Z', 'P1Y2M3DT4H')).toBe('2027-07-04T04:00:00.000Z');
  });

  it('treats P0D and PT0S as zero', () => {
    expect(addDuration(1000, 'P0D')).toBe(1000);
    expect(isZeroDuration('PT0S')).toBe(true);
    expect(isZeroDuration('PT0.001S')).toBe(false);
  });

  it('rejects what is not an ISO 8601 duration with a non-retryable failure', () => {
    for (const bad of ['', 'P', 'PT', '6h', 'P1H', '-P1D']) {
      let thrown: unknown;
      try {
        parseDuration(bad);
      } catch (error) {
        thrown = error;
      }
      expect(thrown, bad).toBeInstanceOf(ApplicationFailure);
      expect((thrown as ApplicationFailure).type).toBe(INVALID_DURATION);
      expect((thrown as ApplicationFailure).nonRetryable).toBe(true);
    }
  });
});
