/**
 * The log format: JSON lines for machines, short lines for a person at a terminal (WATCHER_LOG_FORMAT=auto).
 */
import { describe, expect, it } from 'vitest';
import { prettyLine } from '../../../src/logger.js';

const at = Date.parse('2026-12-01T14:02:07.123Z');

/** A pino JSON line of `level` logged at `at`, with `fields` after the time. */
const pinoLine = (level: number, fields: Record<string, unknown>) => JSON.stringify({ level, time: at, ...fields });

describe('prettyLine', () => {
  it('shows the time, the level and the message, then the fields as key=value', () => {
    const json = pinoLine(30, {
      pid: 7,
      hostname: 'h',
      name: 'expectations-watcher',
      msg: 'bridge listening',
      url: 'http://localhost:3000',
    });

    expect(prettyLine(json)).toBe('14:02:07 INFO  bridge listening url=http://localhost:3000\n');
  });

  it('quotes a field with spaces and writes objects as JSON', () => {
    const json = pinoLine(40, { msg: 'card unreadable', reason: 'not a card', ids: { expectationId: 'EXP-1' } });

    expect(prettyLine(json)).toBe('14:02:07 WARN  card unreadable reason="not a card" ids={"expectationId":"EXP-1"}\n');
  });

  it("puts an error's stack on the lines below, indented", () => {
    const json = pinoLine(50, {
      msg: 'error while stopping',
      err: { message: 'boom', stack: 'Error: boom\n    at stop (x.ts:1:1)' },
    });

    expect(prettyLine(json)).toBe('14:02:07 ERROR error while stopping\n  Error: boom\n      at stop (x.ts:1:1)\n');
  });

  it('colours warnings and errors only when asked to', () => {
    const json = pinoLine(50, { msg: 'x' });

    expect(prettyLine(json, true)).toContain('\u001b[31mERROR\u001b[0m');
    expect(prettyLine(json)).not.toContain('\u001b[');
  });

  it('passes a line that is not JSON through unchanged', () => {
    expect(prettyLine('plain text')).toBe('plain text\n');
  });
});
