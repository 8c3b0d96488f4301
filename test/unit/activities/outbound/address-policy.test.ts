/**
 * The outbound address policy (activities/outbound/address-policy.ts) and its two settings: which addresses an agent's card
 * may send the watcher to. IPv4, IPv6 and IPv6 that carries IPv4; CIDR parsing; the longest range deciding; the
 * settings' defaults and their errors, which name the variable.
 */
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../../../src/config.js';
import {
  decideAddress,
  describeRules,
  parseAddress,
  parseRange,
  parseRangeList,
  STRICT_RULES,
  type OutboundRules,
} from '../../../../activities/outbound/address-policy.js';

/** The rules the two settings give, read as the watcher reads them (on an existing cluster). */
function rulesOf(env: { WATCHER_OUTBOUND_ALLOW?: string; WATCHER_OUTBOUND_DENY?: string }): OutboundRules {
  return loadConfig({ TEMPORAL_ADDRESS: 'temporal:7233', ...env }).outbound;
}

const verdict = (rules: OutboundRules, address: string) => {
  const decision = decideAddress(rules, address);
  return { allowed: decision.allowed, by: decision.by, range: decision.range?.text };
};

describe('the built-in ranges, with neither setting', () => {
  it.each([
    ['127.0.0.1', '127.0.0.0/8'],
    ['127.255.0.9', '127.0.0.0/8'],
    ['169.254.169.254', '169.254.0.0/16'],
    ['10.20.30.40', '10.0.0.0/8'],
    ['172.16.0.1', '172.16.0.0/12'],
    ['172.31.255.255', '172.16.0.0/12'],
    ['192.168.1.1', '192.168.0.0/16'],
    ['100.64.0.1', '100.64.0.0/10'],
    ['100.127.255.255', '100.64.0.0/10'],
    ['0.0.0.0', '0.0.0.0/8'],
    ['224.0.0.251', '224.0.0.0/4'],
    ['255.255.255.255', '240.0.0.0/4'],
    ['::1', '::1/128'],
    ['::', '::/128'],
    ['fe80::1', 'fe80::/10'],
    ['fe80::1%eth0', 'fe80::/10'],
    ['fd00:ec2::254', 'fc00::/7'],
    ['fc00::1', 'fc00::/7'],
    ['ff02::1', 'ff00::/8'],
  ])('deny %s (in %s)', (address, range) => {
    expect(verdict(STRICT_RULES, address)).toEqual({ allowed: false, by: 'built-in', range });
  });

  it.each(['8.8.8.8', '172.32.0.1', '100.128.0.1', '192.169.0.1', '2001:4860:4860::8888', '2a00:1450:4001:81b::200e'])(
    'allow the public address %s',
    (address) => {
      expect(verdict(STRICT_RULES, address)).toEqual({ allowed: true, by: 'public', range: undefined });
    },
  );

  it.each([
    ['::ffff:127.0.0.1', '127.0.0.1', '127.0.0.0/8'],
    ['::ffff:7f00:1', '127.0.0.1', '127.0.0.0/8'],
    ['::ffff:169.254.169.254', '169.254.169.254', '169.254.0.0/16'],
    ['::FFFF:A00:1', '10.0.0.1', '10.0.0.0/8'],
    ['64:ff9b::a9fe:a9fe', '169.254.169.254', '169.254.0.0/16'],
  ])('judge %s, which carries an IPv4 address, as %s', (address, v4, range) => {
    const decision = decideAddress(STRICT_RULES, address);

    expect([decision.allowed, decision.address, decision.range?.text]).toEqual([false, v4, range]);
  });

  it('allows an IPv4-mapped public address, and a bracketed IPv6 literal as a URL spells it is the address inside', () => {
    expect(verdict(STRICT_RULES, '::ffff:8.8.8.8')).toEqual({ allowed: true, by: 'public', range: undefined });
    expect(verdict(STRICT_RULES, '[::1]')).toEqual({ allowed: false, by: 'built-in', range: '::1/128' });
  });

  it('denies what is no IP address at all', () => {
    expect(decideAddress(STRICT_RULES, 'localhost').allowed).toBe(false);
    expect(decideAddress(STRICT_RULES, '1.2.3').allowed).toBe(false);
  });
});

describe('WATCHER_OUTBOUND_ALLOW and WATCHER_OUTBOUND_DENY', () => {
  it('let in a named group (loopback) or one range, and nothing else that is not public', () => {
    const rules = rulesOf({ WATCHER_OUTBOUND_ALLOW: 'loopback, 10.1.0.0/16' });

    expect(verdict(rules, '127.0.0.1')).toEqual({ allowed: true, by: 'allow', range: '127.0.0.0/8' });
    expect(verdict(rules, '::1')).toEqual({ allowed: true, by: 'allow', range: '::1/128' });
    expect(verdict(rules, '::ffff:127.0.0.1')).toEqual({ allowed: true, by: 'allow', range: '127.0.0.0/8' });
    expect(verdict(rules, '10.1.200.3')).toEqual({ allowed: true, by: 'allow', range: '10.1.0.0/16' });
    expect(verdict(rules, '10.2.0.1')).toEqual({ allowed: false, by: 'built-in', range: '10.0.0.0/8' });
    expect(verdict(rules, '169.254.169.254')).toEqual({ allowed: false, by: 'built-in', range: '169.254.0.0/16' });
  });

  it.each([
    [
      'decide by the longest range that holds the address, a deny winning a tie',
      { WATCHER_OUTBOUND_ALLOW: '10.0.0.0/8, 192.168.1.0/24', WATCHER_OUTBOUND_DENY: '10.9.0.0/16, 192.168.1.0/24' },
      '10.1.0.1',
      { '10.9.3.4': '10.9.0.0/16', '192.168.1.7': '192.168.1.0/24' },
    ],
    [
      'give an allow-list-only policy with a deny of everything',
      { WATCHER_OUTBOUND_ALLOW: '203.0.113.0/24', WATCHER_OUTBOUND_DENY: '0.0.0.0/0, ::/0' },
      '203.0.113.9',
      { '8.8.8.8': '0.0.0.0/0', '2001:4860:4860::8888': '::/0' },
    ],
  ])('%s', (_title, env, allowed, denied) => {
    const rules = rulesOf(env);

    expect(verdict(rules, allowed).allowed).toBe(true);
    for (const [address, range] of Object.entries(denied)) {
      expect(verdict(rules, address)).toEqual({ allowed: false, by: 'deny', range });
    }
  });

  it('scope an entry with a port to that port: the host allowed for one service is not open on its others', () => {
    const rules = rulesOf({
      WATCHER_OUTBOUND_ALLOW: '10.1.0.5:8443, 10.2.0.0/16:443, [fd00::/8]:9000',
      WATCHER_OUTBOUND_DENY: '0.0.0.0/0:25',
    });
    const at = (address: string, port?: number) => {
      const decision = decideAddress(rules, address, port);
      return { allowed: decision.allowed, by: decision.by, range: decision.range?.text };
    };

    expect(at('10.1.0.5', 8443)).toEqual({ allowed: true, by: 'allow', range: '10.1.0.5:8443' });
    expect(at('10.1.0.5', 9464)).toEqual({ allowed: false, by: 'built-in', range: '10.0.0.0/8' });
    expect(at('10.1.0.5')).toEqual({ allowed: false, by: 'built-in', range: '10.0.0.0/8' });
    expect(at('10.2.7.7', 443)).toEqual({ allowed: true, by: 'allow', range: '10.2.0.0/16:443' });
    expect(at('10.2.7.7', 80).allowed).toBe(false);
    expect(at('fd12::1', 9000)).toEqual({ allowed: true, by: 'allow', range: '[fd00::/8]:9000' });
    expect(at('fd12::1', 9001).allowed).toBe(false);
    expect(at('203.0.113.9', 25)).toEqual({ allowed: false, by: 'deny', range: '0.0.0.0/0:25' });
    expect(at('203.0.113.9', 443)).toEqual({ allowed: true, by: 'public', range: undefined });
  });

  it.each(['10.1.0.5:0', '10.1.0.5:65536', '10.1.0.5:http', 'fd00::1:8443x', '[fd00::1]:', '[10.1.0.5]:x'])(
    'refuse an entry with a port that is not one (%s), naming the variable',
    (entry) => {
      expect(() => rulesOf({ WATCHER_OUTBOUND_ALLOW: entry })).toThrow(ConfigError);
      expect(() => rulesOf({ WATCHER_OUTBOUND_ALLOW: entry })).toThrow(/WATCHER_OUTBOUND_ALLOW/);
    },
  );

  it('turn the policy off with an allow of everything', () => {
    const rules = rulesOf({ WATCHER_OUTBOUND_ALLOW: '0.0.0.0/0,::/0' });

    expect(['127.0.0.1', '169.254.169.254', '::1', 'fd00::1'].map((a) => verdict(rules, a).allowed)).toEqual([
      true,
      true,
      true,
      true,
    ]);
  });

  it('default to loopback when the watcher runs Temporal itself (npm start), and to nothing on an existing cluster', () => {
    const embedded = loadConfig({}).outbound;
    const cluster = loadConfig({ TEMPORAL_ADDRESS: 'temporal:7233' }).outbound;
    const strictEmbedded = loadConfig({ WATCHER_OUTBOUND_ALLOW: 'none' }).outbound;

    expect([verdict(embedded, '127.0.0.1').allowed, verdict(embedded, '::1').allowed]).toEqual([true, true]);
    expect(verdict(embedded, '169.254.169.254').allowed).toBe(false);
    expect(verdict(embedded, '10.0.0.1').allowed).toBe(false);
    expect(cluster).toEqual({ allow: [], deny: [] });
    expect(verdict(cluster, '127.0.0.1').allowed).toBe(false);
    expect(verdict(strictEmbedded, '127.0.0.1').allowed).toBe(false);
  });

  it('read an empty value as unset, as docker-compose.yml passes an unset one', () => {
    expect(
      loadConfig({ TEMPORAL_ADDRESS: 'temporal:7233', WATCHER_OUTBOUND_ALLOW: '', WATCHER_OUTBOUND_DENY: '' }).outbound,
    ).toEqual({
      allow: [],
      deny: [],
    });
  });

  // The entry the error names is the whole value unless the row says which part of it.
  it.each<[name: string, value: string, entry?: string]>([
    ['WATCHER_OUTBOUND_ALLOW', '10.0.0.0/33'],
    ['WATCHER_OUTBOUND_ALLOW', 'loopback,intranet', 'intranet'],
    ['WATCHER_OUTBOUND_ALLOW', '10.0.0.0/8/8'],
    ['WATCHER_OUTBOUND_DENY', 'fd00::/129'],
    ['WATCHER_OUTBOUND_DENY', '300.1.2.3'],
    ['WATCHER_OUTBOUND_DENY', 'none,10.0.0.0/8', 'none'],
    ['WATCHER_OUTBOUND_DENY', '10.0.0.0/'],
  ])('refuses %s=%s with an error naming the variable and the entry', (name, value, entry = value) => {
    const load = () => loadConfig({ TEMPORAL_ADDRESS: 'temporal:7233', [name]: value });

    expect(load).toThrow(ConfigError);
    expect(load).toThrow(
      new RegExp(`${name}: must be a comma-separated list of IPv4/IPv6 addresses, CIDR ranges .*\\(not '${entry}'\\)`),
    );
  });
});

describe('parsing addresses and ranges', () => {
  it('reads IPv4, IPv6 (compressed, with a dotted tail) and clears host bits of a range', () => {
    expect(parseAddress('10.0.0.1')).toEqual({ family: 4, value: 0x0a000001n });
    expect(parseAddress('2001:db8::1')).toEqual({ family: 6, value: 0x20010db8000000000000000000000001n });
    expect(parseAddress('::')).toEqual({ family: 6, value: 0n });
    expect(parseAddress('1::')).toEqual({ family: 6, value: 1n << 112n });
    expect(parseAddress('::ffff:1.2.3.4')).toEqual({ family: 4, value: 0x01020304n });
    expect(parseRange('10.1.2.3/8')).toMatchObject({ family: 4, network: 0x0a000000n, prefix: 8 });
    expect(parseRange('fd12:3456::/16')).toMatchObject({ family: 6, network: 0xfd12n << 112n, prefix: 16 });
    expect(parseRange('192.0.2.1')).toMatchObject({ family: 4, prefix: 32 });
    expect(parseRange('::1')).toMatchObject({ family: 6, prefix: 128 });
  });

  it('reads an IPv4-mapped range as the IPv4 range it maps', () => {
    expect(parseRange('::ffff:10.0.0.0/104')).toMatchObject({ family: 4, network: 0x0a000000n, prefix: 8 });
    expect(parseRange('::ffff:10.0.0.0/64')).toBeUndefined();
  });

  it('refuses what is no address or range', () => {
    for (const text of [
      '',
      'localhost',
      '10.0.0',
      '10.0.0.0/-1',
      '10.0.0.0/0x8',
      '::1/200',
      '1.2.3.4/33',
      'fe80::zz',
    ]) {
      expect(parseRange(text), text).toBeUndefined();
    }
  });

  it('reads a list with the named groups and `none`, or names the entries it cannot read', () => {
    const list = parseRangeList('loopback, linklocal,uniquelocal , 192.0.2.0/24');

    expect('ranges' in list && list.ranges.map((r) => r.text)).toEqual([
      '127.0.0.0/8',
      '::1/128',
      '169.254.0.0/16',
      'fe80::/10',
      '10.0.0.0/8',
      '172.16.0.0/12',
      '192.168.0.0/16',
      'fc00::/7',
      '192.0.2.0/24',
    ]);
    expect(parseRangeList('none')).toEqual({ ranges: [] });
    expect(parseRangeList('loopback,,10.0.0.0/8')).toEqual({ bad: [''] });
  });

  it('says in one line what the policy allows and denies', () => {
    const otherwise = 'loopback, link-local, private (RFC 1918, ULA), CGNAT and reserved addresses denied otherwise';

    expect(describeRules(rulesOf({}))).toBe(`nothing allowed beyond the public internet; ${otherwise}`);
    expect(
      describeRules(rulesOf({ WATCHER_OUTBOUND_ALLOW: 'loopback', WATCHER_OUTBOUND_DENY: '203.0.113.0/24' })),
    ).toBe(`allowed beyond the public internet: 127.0.0.0/8, ::1/128; denied: 203.0.113.0/24; ${otherwise}`);
  });
});
