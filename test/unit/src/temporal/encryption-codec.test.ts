/**
 * The AES-256-GCM payload codec and its key file: round trip, rotation, and every way a payload or a key
 * file can be wrong, each with the error an operator reads.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { defaultPayloadConverter, type Payload } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../../../src/config.js';
import { loadCodecKeys, parseCodecKeys } from '../../../../src/temporal/codec-keys.js';
import {
  ENCRYPTED_ENCODING,
  EncryptionCodec,
  KEY_ID_METADATA_KEY,
  PayloadDecryptionError,
  type CodecKeyRing,
} from '../../../../src/temporal/encryption-codec.js';

const key = () => new Uint8Array(randomBytes(32));
const ring = (current: string, keys: Record<string, Uint8Array>): CodecKeyRing => ({
  current,
  keys: new Map(Object.entries(keys)),
});
const text = (bytes: Uint8Array | null | undefined) => Buffer.from(bytes ?? []).toString('utf8');

const subject = { type: 'shipment', id: 'S-secret-42' };
const plain = (): Payload => defaultPayloadConverter.toPayload({ subject, expects: 'The parcel reaches Ms. Example' });

describe('EncryptionCodec', () => {
  const k1 = key();
  const k2 = key();

  it('seals a payload as binary/encrypted under the current key id, with nothing of the plaintext left', async () => {
    const codec = new EncryptionCodec(ring('k1', { k1 }));

    const [sealed] = await codec.encode([plain()]);

    expect(Object.keys(sealed!.metadata!).sort()).toEqual(['encoding', KEY_ID_METADATA_KEY]);
    expect(text(sealed!.metadata!.encoding)).toBe(ENCRYPTED_ENCODING);
    expect(text(sealed!.metadata![KEY_ID_METADATA_KEY])).toBe('k1');
    const bytes = Buffer.from(sealed!.data!);
    expect(bytes.includes('S-secret-42')).toBe(false);
    expect(bytes.includes('json/plain')).toBe(false);
  });

  it('decodes what it encoded back to the same payload, metadata and data', async () => {
    const codec = new EncryptionCodec(ring('k1', { k1 }));
    const original = [
      plain(),
      defaultPayloadConverter.toPayload(null),
      defaultPayloadConverter.toPayload(new Uint8Array([0, 1, 2])),
    ];

    const decoded = await codec.decode(await codec.encode(original));

    expect(decoded.map((p) => defaultPayloadConverter.fromPayload(p))).toEqual([
      { subject, expects: 'The parcel reaches Ms. Example' },
      null,
      new Uint8Array([0, 1, 2]),
    ]);
    expect(decoded.map((p) => text(p.metadata?.encoding))).toEqual(original.map((p) => text(p.metadata?.encoding)));
  });

  it('seals the same payload differently each time (a fresh nonce)', async () => {
    const codec = new EncryptionCodec(ring('k1', { k1 }));

    const [a, b] = await codec.encode([plain(), plain()]);

    expect(Buffer.from(a!.data!).equals(Buffer.from(b!.data!))).toBe(false);
  });

  it('after a rotation seals with the new key and still opens what the old key sealed', async () => {
    const before = new EncryptionCodec(ring('k1', { k1 }));
    const after = new EncryptionCodec(ring('k2', { k1, k2 }));
    const [old] = await before.encode([plain()]);

    const [fresh] = await after.encode([plain()]);
    const [opened] = await after.decode([old!]);

    expect(text(fresh!.metadata![KEY_ID_METADATA_KEY])).toBe('k2');
    expect(defaultPayloadConverter.fromPayload(opened!)).toEqual({
      subject,
      expects: 'The parcel reaches Ms. Example',
    });
  });

  it('fails on a key id it does not hold, naming the id and the ids it has', async () => {
    const [sealed] = await new EncryptionCodec(ring('k2', { k2 })).encode([plain()]);
    const other = new EncryptionCodec(ring('k1', { k1, k0: key() }));

    const decoding = other.decode([sealed!]);

    await expect(decoding).rejects.toThrow(PayloadDecryptionError);
    await expect(decoding).rejects.toThrow(
      "a payload is encrypted with key id 'k2', which is not in the key file (it holds 'k1', 'k0'): add that key back to decrypt it",
    );
  });

  it('fails on an altered ciphertext', async () => {
    const codec = new EncryptionCodec(ring('k1', { k1 }));
    const [sealed] = await codec.encode([plain()]);
    const data = new Uint8Array(sealed!.data!);
    data[20]! ^= 0x01;

    await expect(codec.decode([{ ...sealed!, data }])).rejects.toThrow(
      "an encrypted payload failed authentication with key 'k1': it was altered, or sealed with another key under that id",
    );
  });

  it('fails when the key id in the metadata is changed to another key it holds', async () => {
    const codec = new EncryptionCodec(ring('k1', { k1, k2 }));
    const [sealed] = await codec.encode([plain()]);
    const relabelled = { ...sealed!, metadata: { ...sealed!.metadata, [KEY_ID_METADATA_KEY]: Buffer.from('k2') } };

    await expect(codec.decode([relabelled])).rejects.toThrow("failed authentication with key 'k2'");
  });

  it('fails on a payload too short to hold a nonce and a tag, and on one without a key id', async () => {
    const codec = new EncryptionCodec(ring('k1', { k1 }));
    const [sealed] = await codec.encode([plain()]);

    await expect(codec.decode([{ ...sealed!, data: sealed!.data!.subarray(0, 20) }])).rejects.toThrow(
      "an encrypted payload (key id 'k1') is 20 bytes, too short to be one",
    );
    await expect(
      codec.decode([{ metadata: { encoding: sealed!.metadata!.encoding! }, data: sealed!.data! }]),
    ).rejects.toThrow("an encrypted payload carries no 'encryption-key-id' metadata");
  });

  it('hands a payload that is not encrypted back unchanged on decode', async () => {
    const codec = new EncryptionCodec(ring('k1', { k1 }));
    const json = plain();
    const bare: Payload = { data: new Uint8Array([1]) };

    const decoded = await codec.decode([json, bare]);

    expect(decoded[0]).toBe(json);
    expect(decoded[1]).toBe(bare);
  });

  it('refuses a ring whose current key is missing or whose keys are not 32 bytes', () => {
    expect(() => new EncryptionCodec(ring('k9', { k1 }))).toThrow("the key ring has no key 'k9' to encrypt with");
    expect(() => new EncryptionCodec(ring('k1', { k1: new Uint8Array(16) }))).toThrow("key 'k1' has 16 bytes, not 32");
  });
});

describe('the key file (WATCHER_CODEC_KEYS_FILE)', () => {
  const b64 = (bytes: Uint8Array) => Buffer.from(bytes).toString('base64');
  const dir = mkdtempSync(path.join(os.tmpdir(), 'codec-keys-'));
  const file = (name: string, content: string) => {
    const target = path.join(dir, name);
    writeFileSync(target, content);
    return target;
  };

  it('reads the current id and every key', () => {
    const a = key();
    const b = key();
    const target = file(
      'good.json',
      JSON.stringify({ current: '2026-07', keys: { '2026-07': b64(b), '2026-01': b64(a) } }),
    );

    const keys = loadCodecKeys(target);

    expect(keys.current).toBe('2026-07');
    expect([...keys.keys.keys()]).toEqual(['2026-07', '2026-01']);
    expect(Buffer.from(keys.keys.get('2026-01')!).equals(Buffer.from(a))).toBe(true);
  });

  it('is a ConfigError naming the variable when the file is missing or not JSON', () => {
    const missing = path.join(dir, 'nope.json');

    expect(() => loadCodecKeys(missing)).toThrow(ConfigError);
    expect(() => loadCodecKeys(missing)).toThrow(`WATCHER_CODEC_KEYS_FILE: ${missing}: does not exist`);
    expect(() => loadCodecKeys(file('bad.json', '{"current":'))).toThrow(
      /^WATCHER_CODEC_KEYS_FILE: .*bad\.json: .*JSON/,
    );
  });

  it('names each bad field: a short key, a key that is not base64, a current id without a key, an unknown field', () => {
    const raw = {
      current: 'k3',
      keys: { k1: b64(randomBytes(16)), k2: 'not base64!' },
      rotate: true,
    };

    expect(() => parseCodecKeys(raw, '/etc/keys.json')).toThrow(
      [
        'WATCHER_CODEC_KEYS_FILE: /etc/keys.json is not a valid key file',
        '  keys.k1: must be 32 bytes once base64-decoded (openssl rand -base64 32)',
        '  keys.k2: must be base64 (openssl rand -base64 32)',
        '  (file): Unrecognized key: "rotate"',
        '  current: names a key that is not in keys',
      ].join('\n'),
    );
    expect(() => parseCodecKeys({ current: 'k3', keys: { k1: b64(key()) } }, '/etc/keys.json')).toThrow(
      'WATCHER_CODEC_KEYS_FILE: /etc/keys.json is not a valid key file\n  current: names a key that is not in keys',
    );
    expect(() => parseCodecKeys({ current: 'k1', keys: {} }, '/etc/keys.json')).toThrow('  keys: holds no key');
  });
});

describe('the codec settings of loadConfig', () => {
  it('reads the key file path (absolute) and the UI origins', () => {
    const config = loadConfig({
      WATCHER_CODEC_KEYS_FILE: 'keys.json',
      WATCHER_CODEC_CORS_ORIGINS: 'http://localhost:8080, https://temporal.example.com/',
    });

    expect(config.codec).toEqual({
      keysFile: path.resolve('keys.json'),
      corsOrigins: ['http://localhost:8080', 'https://temporal.example.com'],
    });
  });

  it('leaves the codec off without a key file', () => {
    expect(loadConfig({}).codec).toBeUndefined();
  });

  it('refuses an origin with a path, a wildcard, and origins without a key file', () => {
    expect(() =>
      loadConfig({ WATCHER_CODEC_KEYS_FILE: 'k', WATCHER_CODEC_CORS_ORIGINS: 'http://ui:8080/namespaces' }),
    ).toThrow(
      "WATCHER_CODEC_CORS_ORIGINS: 'http://ui:8080/namespaces' is not an origin (scheme://host[:port], e.g. http://localhost:8080)",
    );
    expect(() => loadConfig({ WATCHER_CODEC_KEYS_FILE: 'k', WATCHER_CODEC_CORS_ORIGINS: '*' })).toThrow(
      "'*' is not an origin",
    );
    expect(() => loadConfig({ WATCHER_CODEC_CORS_ORIGINS: 'http://localhost:8080' })).toThrow(
      'WATCHER_CODEC_CORS_ORIGINS: set, but without WATCHER_CODEC_KEYS_FILE there is no codec endpoint to call',
    );
  });
});
