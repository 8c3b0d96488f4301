/**
 * WATCHER_TRUST_PROXY as loadConfig reads it: off by default, Express's `trust proxy` values otherwise, and a bad
 * value refused with the variable's name before Express would throw on it at start.
 */
import express from 'express';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../../src/config.js';

const trustProxyOf = (value: string) => loadConfig({ WATCHER_TRUST_PROXY: value }).trustProxy;

describe('WATCHER_TRUST_PROXY', () => {
  it('is off when unset or empty', () => {
    expect(loadConfig({}).trustProxy).toBe(false);
    expect(trustProxyOf('')).toBe(false);
  });

  it.each([
    ['true', true],
    ['false', false],
    ['0', 0],
    ['2', 2],
    ['loopback', ['loopback']],
    ['loopback, linklocal,uniquelocal', ['loopback', 'linklocal', 'uniquelocal']],
    ['10.0.0.1', ['10.0.0.1']],
    ['10.0.0.0/8, 192.168.0.0/255.255.0.0', ['10.0.0.0/8', '192.168.0.0/255.255.0.0']],
    ['::1, fd00::/8', ['::1', 'fd00::/8']],
  ])('reads %j as %j, a value Express takes', (value, expected) => {
    const trustProxy = trustProxyOf(value);

    expect(trustProxy).toEqual(expected);
    expect(() => express().set('trust proxy', trustProxy)).not.toThrow();
  });

  it.each(['proxy', '10.0.0.0/33', 'fd00::/129', '10.0.0.0/255.0.255.0', '1.2.3', 'loopback,,10.0.0.1', '-1'])(
    'refuses %j, naming the variable',
    (value) => {
      expect(() => trustProxyOf(value)).toThrow(ConfigError);
      expect(() => trustProxyOf(value)).toThrow(
        /WATCHER_TRUST_PROXY: must be true, false, a hop count, or a comma-separated list/,
      );
    },
  );

  it('refuses what Express would refuse', () => {
    for (const value of ['10.0.0.0/33', '10.0.0.0/255.0.255.0']) {
      expect(() => express().set('trust proxy', [value])).toThrow();
    }
  });
});
