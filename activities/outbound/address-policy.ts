/**
 * The outbound address policy (WATCHER_OUTBOUND_ALLOW, WATCHER_OUTBOUND_DENY): which addresses, and ports, the watcher
 * may connect to when an agent's card names them (docs/operations.md, "Outbound requests to agents").
 */
import { isIP } from 'node:net';

/** One CIDR range, e.g. `10.0.0.0/8`; `name` says what it is in messages (`loopback`, `private (RFC 1918)`). */
export interface AddressRange {
  family: 4 | 6;
  /** The network address, host bits zero. */
  network: bigint;
  prefix: number;
  /** As written, or the built-in range's CIDR. */
  text: string;
  name?: string;
  /** The one port the entry is for; absent, every port. */
  port?: number;
}

/** The two settings, parsed. */
export interface OutboundRules {
  allow: AddressRange[];
  deny: AddressRange[];
}

/** What the policy says about one address, and why. */
export interface AddressDecision {
  allowed: boolean;
  /** The normalised address judged (an IPv4-mapped IPv6 address as IPv4). */
  address: string;
  /** The range that decided, absent for a public address no rule names. */
  range?: AddressRange;
  /** `allow`/`deny`: a range of the setting of that name decided; `built-in`: a non-public range no setting names. */
  by: 'allow' | 'deny' | 'built-in' | 'public';
}

const bits = (family: 4 | 6) => (family === 4 ? 32 : 128);

function range(text: string, name?: string): AddressRange {
  const parsed = parseRange(text);
  if (!parsed) throw new Error(`built-in range ${text} does not parse`);
  return { ...parsed, name };
}

const LOOPBACK = [range('127.0.0.0/8', 'loopback'), range('::1/128', 'loopback')];
const LINK_LOCAL = [range('169.254.0.0/16', 'link-local (cloud metadata services)'), range('fe80::/10', 'link-local')];
const UNIQUE_LOCAL = [
  range('10.0.0.0/8', 'private (RFC 1918)'),
  range('172.16.0.0/12', 'private (RFC 1918)'),
  range('192.168.0.0/16', 'private (RFC 1918)'),
  range('fc00::/7', 'unique local (ULA)'),
];

/** The names a setting may use for groups of ranges (the words WATCHER_TRUST_PROXY takes, as Express spells them). */
export const NAMED_RANGES: Readonly<Record<string, readonly AddressRange[]>> = {
  loopback: LOOPBACK,
  linklocal: LINK_LOCAL,
  uniquelocal: UNIQUE_LOCAL,
};

/**
 * The ranges denied unless a setting names them: everything that is not the public internet (loopback, link-local
 * with 169.254.169.254, RFC 1918, ULA, CGNAT, "this network", multicast, reserved).
 */
export const NON_PUBLIC_RANGES: readonly AddressRange[] = [
  ...LOOPBACK,
  ...LINK_LOCAL,
  ...UNIQUE_LOCAL,
  range('0.0.0.0/8', '"this network" (0.0.0.0 reaches the host itself)'),
  range('100.64.0.0/10', 'shared address space (CGNAT, RFC 6598)'),
  range('192.0.0.0/24', 'IETF protocol assignments'),
  range('198.18.0.0/15', 'benchmarking (RFC 2544)'),
  range('224.0.0.0/4', 'multicast'),
  range('240.0.0.0/4', 'reserved (and broadcast)'),
  range('::/128', 'unspecified'),
  range('::/96', 'IPv4-compatible (deprecated)'),
  range('64:ff9b:1::/48', 'local-use NAT64'),
  range('fec0::/10', 'site-local (deprecated)'),
  range('ff00::/8', 'multicast'),
];

function parseIPv4(text: string): bigint | undefined {
  if (isIP(text) !== 4) return undefined;
  return text.split('.').reduce((value, octet) => (value << 8n) | BigInt(Number(octet)), 0n);
}

function parseIPv6(text: string): bigint | undefined {
  if (isIP(text) !== 6) return undefined;
  let body = text.replace(/%.*$/, ''); // a zone id (fe80::1%eth0) says which interface, not which address
  // A dotted IPv4 tail (::ffff:127.0.0.1) is two groups.
  const tail = /(\d+\.\d+\.\d+\.\d+)$/.exec(body);
  if (tail) {
    const v4 = parseIPv4(tail[1]!)!;
    body = `${body.slice(0, -tail[1]!.length)}${(v4 >> 16n).toString(16)}:${(v4 & 0xffffn).toString(16)}`;
  }
  const [head = '', rest] = body.split('::');
  const left = head ? head.split(':') : [];
  const right = rest ? rest.split(':') : [];
  const groups =
    rest === undefined ? left : [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right];
  return groups.reduce((value, group) => (value << 16n) | BigInt(parseInt(group, 16)), 0n);
}

/** An address as the policy judges it: IPv4, IPv6, or IPv6 carrying an IPv4 address (mapped, NAT64) as IPv4. */
export function parseAddress(text: string): { family: 4 | 6; value: bigint } | undefined {
  const bare = text.startsWith('[') && text.endsWith(']') ? text.slice(1, -1) : text;
  const v4 = parseIPv4(bare);
  if (v4 !== undefined) return { family: 4, value: v4 };
  const v6 = parseIPv6(bare);
  if (v6 === undefined) return undefined;
  const embedded = v6 & 0xffffffffn;
  if (v6 >> 32n === 0xffffn) return { family: 4, value: embedded }; // ::ffff:0:0/96, IPv4-mapped
  if (v6 >> 32n === 0x64ff9b0000000000000000n) return { family: 4, value: embedded }; // 64:ff9b::/96, NAT64
  return { family: 6, value: v6 };
}

/** `10.0.0.0/8`, `fd00::/8` or a single address; host bits are cleared. Undefined when it is not one. */
export function parseRange(text: string): Omit<AddressRange, 'name'> | undefined {
  const [addressText = '', prefixText, ...extra] = text.split('/');
  if (extra.length > 0) return undefined;
  const address = parseAddress(addressText);
  if (!address) return undefined;
  let prefix: number;
  if (prefixText === undefined) prefix = bits(address.family);
  else if (/^\d{1,3}$/.test(prefixText)) prefix = Number(prefixText);
  else return undefined;
  // A mapped range (::ffff:10.0.0.0/104) is the IPv4 range it maps.
  const written = isIP(addressText.replace(/^\[|\]$/g, '')) === 6 ? 128 : 32;
  if (written === 128 && address.family === 4) {
    if (prefixText !== undefined && prefix < 96) return undefined;
    prefix = prefixText === undefined ? 32 : prefix - 96;
  }
  if (prefix > bits(address.family)) return undefined;
  const hostBits = BigInt(bits(address.family) - prefix);
  return { family: address.family, network: (address.value >> hostBits) << hostBits, prefix, text };
}

function contains(r: AddressRange, address: { family: 4 | 6; value: bigint }, port?: number): boolean {
  if (r.family !== address.family) return false;
  if (r.port !== undefined && r.port !== port) return false;
  const hostBits = BigInt(bits(r.family) - r.prefix);
  return address.value >> hostBits === r.network >> hostBits;
}

/** The range with the longest prefix that holds the address (one with a port before one without, on a tie). */
function longest(
  ranges: readonly AddressRange[],
  address: { family: 4 | 6; value: bigint },
  port?: number,
): AddressRange | undefined {
  let best: AddressRange | undefined;
  for (const r of ranges) {
    if (!contains(r, address, port)) continue;
    if (
      !best ||
      r.prefix > best.prefix ||
      (r.prefix === best.prefix && r.port !== undefined && best.port === undefined)
    )
      best = r;
  }
  return best;
}

/** Formats a parsed address back as text (IPv6 uncompressed, which is enough for messages). */
function formatAddress({ family, value }: { family: 4 | 6; value: bigint }): string {
  if (family === 4) return [24n, 16n, 8n, 0n].map((shift) => String((value >> shift) & 0xffn)).join('.');
  return Array.from({ length: 8 }, (_, i) => ((value >> BigInt(112 - 16 * i)) & 0xffffn).toString(16)).join(':');
}

/**
 * Judges one IP address (text, as DNS or a URL gives it), for a connection to `port` (entries with a port decide only
 * for theirs; without `port`, only the entries without one count). An address that does not parse is denied.
 */
export function decideAddress(rules: OutboundRules, text: string, port?: number): AddressDecision {
  const address = parseAddress(text);
  if (!address) return { allowed: false, address: text, by: 'built-in' };
  const shown = address.family === 4 ? formatAddress(address) : text.replace(/^\[|\]$/g, '');
  const allow = longest(rules.allow, address, port);
  const deny = longest(rules.deny, address, port);
  if (deny && (!allow || deny.prefix >= allow.prefix))
    return { allowed: false, address: shown, range: deny, by: 'deny' };
  if (allow) return { allowed: true, address: shown, range: allow, by: 'allow' };
  const builtIn = longest(NON_PUBLIC_RANGES, address);
  if (builtIn) return { allowed: false, address: shown, range: builtIn, by: 'built-in' };
  return { allowed: true, address: shown, by: 'public' };
}

/** No allow list, no deny list: the built-in non-public ranges are denied, the public internet allowed. */
export const STRICT_RULES: OutboundRules = { allow: [], deny: [] };

/**
 * A setting's value: comma-separated addresses, CIDR ranges and the names `loopback`, `linklocal`, `uniquelocal`;
 * or `none`. Returns the ranges, or the entries it could not read.
 */
export function parseRangeList(value: string): { ranges: AddressRange[] } | { bad: string[] } {
  const entries = value.split(',').map((entry) => entry.trim());
  if (entries.length === 1 && entries[0] === 'none') return { ranges: [] };
  const ranges: AddressRange[] = [];
  const bad: string[] = [];
  for (const entry of entries) {
    const named = NAMED_RANGES[entry];
    const parsed = named ? undefined : parseEntry(entry);
    if (named) ranges.push(...named);
    else if (parsed) ranges.push(parsed);
    else bad.push(entry);
  }
  return bad.length > 0 ? { bad } : { ranges };
}

/**
 * One entry of a setting: a range, or a range with one port (`<IPv4 or IPv4 CIDR>:<port>`, `[<IPv6 or CIDR>]:<port>`).
 */
function parseEntry(entry: string): Omit<AddressRange, 'name'> | undefined {
  const withPort = /^\[([^\]]+)\]:(\d{1,5})$/.exec(entry) ?? /^([\d.]+(?:\/\d{1,2})?):(\d{1,5})$/.exec(entry);
  if (!withPort) return parseRange(entry);
  const port = Number(withPort[2]);
  const parsed = port >= 1 && port <= 65_535 ? parseRange(withPort[1]!) : undefined;
  return parsed ? { ...parsed, text: entry, port } : undefined;
}

/** One line for the start-up log: what the policy lets through beyond the public internet, and what it stops. */
export function describeRules(rules: OutboundRules): string {
  const list = (ranges: readonly AddressRange[]) => [...new Set(ranges.map((r) => r.text))].join(', ');
  const allow =
    rules.allow.length > 0
      ? `allowed beyond the public internet: ${list(rules.allow)}`
      : 'nothing allowed beyond the public internet';
  const deny = rules.deny.length > 0 ? `; denied: ${list(rules.deny)}` : '';
  return `${allow}${deny}; loopback, link-local, private (RFC 1918, ULA), CGNAT and reserved addresses denied otherwise`;
}
