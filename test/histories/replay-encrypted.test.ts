/**
 * Replays the histories written with the payload codec on (v6-encrypted/, recorded by record-encrypted.ts across a
 * key rotation) with a worker configured with the codec's data converter and the test key file codec-keys.json. The
 * unencrypted histories of v6/ are replayed through the same codec too: an encrypted deployment still holds
 * histories written before encryption was turned on, and decode passes their payloads through.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import proto from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import { describe, expect, inject, it } from 'vitest';
import { loadCodecKeys } from '../../src/temporal/codec-keys.js';
import { EncryptionCodec } from '../../src/temporal/encryption-codec.js';

const { History } = proto.temporal.api.history.v1;
const here = path.dirname(fileURLToPath(import.meta.url));
const keys = loadCodecKeys(path.join(here, 'codec-keys.json'));

const filesOf = (folder: string) =>
  readdirSync(path.join(here, folder))
    .filter((file) => file.endsWith('.json'))
    .sort()
    .map((file) => path.join(folder, file));

const encrypted = filesOf('v6-encrypted');
const load = (file: string) => History.fromObject(JSON.parse(readFileSync(path.join(here, file), 'utf8')));

/** The failures of replaying `files` with `payloadCodecs`, one line per history that did not replay. */
async function replayFailures(files: string[], payloadCodecs: EncryptionCodec[]): Promise<string[]> {
  const histories = files.map((file) => ({ workflowId: file.replace(/\.json$/, ''), history: load(file) }));
  const failures: string[] = [];
  for await (const result of Worker.runReplayHistories(
    { workflowBundle: { codePath: inject('workflowBundlePath') }, dataConverter: { payloadCodecs } },
    histories,
  )) {
    if (result.error) failures.push(`${result.workflowId}: ${result.error.message}`);
  }
  return failures;
}

/** The data of every payload in a history (JSON object form: bytes in base64), search attributes left out. */
function payloadData(node: unknown): string[] {
  if (Array.isArray(node)) return node.flatMap(payloadData);
  if (typeof node !== 'object' || node === null) return [];
  return Object.entries(node).flatMap(([key, value]) => {
    if (key === 'searchAttributes') return [];
    if (key === 'data' && typeof value === 'string') return [Buffer.from(value, 'base64').toString('latin1')];
    return payloadData(value);
  });
}

describe('histories recorded with the payload codec', () => {
  it('are of both workflow types, their payloads sealed under both key ids and no business text in clear', () => {
    const texts = encrypted.map((file) => readFileSync(path.join(here, file), 'utf8'));
    const keyIds = new Set(
      texts.flatMap((text) => [...text.matchAll(/"encryption-key-id":"([^"]+)"/g)].map((m) => Buffer.from(m[1]!, 'base64').toString())),
    );
    const types = encrypted.map((file) => load(file).events[0]?.workflowExecutionStartedEventAttributes?.workflowType?.name);
    const inputs = encrypted.map((file) => load(file).events[0]?.workflowExecutionStartedEventAttributes?.input?.payloads?.[0]);

    expect([...new Set(types)].sort()).toEqual(['expectationWorkflow', 'factRouterWorkflow']);
    expect([...keyIds].sort()).toEqual(['2026-01', '2026-07']);
    expect(inputs.map((payload) => Buffer.from(payload?.metadata?.encoding ?? []).toString())).toEqual(
      encrypted.map(() => 'binary/encrypted'),
    );
    // Decrypted, the payloads say "the sealed shipment is delivered"; the bytes of no payload in the files do.
    // Search attributes aside: they never pass through a codec, and the subject is one of them.
    const data = encrypted.flatMap((file) => payloadData(JSON.parse(readFileSync(path.join(here, file), 'utf8'))));
    expect(data.length).toBeGreaterThan(20);
    expect(data.filter((bytes) => bytes.includes('sealed shipment') || bytes.includes('S-rotated-'))).toEqual([]);
  });

  it('replay with the codec’s data converter, the old key and the new', async () => {
    expect(await replayFailures(encrypted, [new EncryptionCodec(keys)])).toEqual([]);
  });

  it('do not replay without the codec, nor with the old key dropped from the key file', async () => {
    const newKeyOnly = new EncryptionCodec({ current: '2026-07', keys: new Map([['2026-07', keys.keys.get('2026-07')!]]) });

    const withoutCodec = await replayFailures(encrypted, []);
    const withoutOldKey = await replayFailures(encrypted, [newKeyOnly]);

    expect(withoutCodec).toHaveLength(encrypted.length);
    expect(withoutOldKey).toHaveLength(encrypted.length);
    expect(withoutOldKey.join('\n')).toContain("key id '2026-01', which is not in the key file");
  });
});

describe('histories recorded before the codec was turned on', () => {
  it('replay through the codec, which passes their payloads through', async () => {
    const plain = filesOf('v6');

    expect(await replayFailures(plain, [new EncryptionCodec(keys)])).toEqual([]);
    expect(plain.length).toBeGreaterThanOrEqual(25);
  });
});
