/**
 * Encryption at rest, the Temporal way: a PayloadCodec that seals every payload the client and the worker
 * write (workflow inputs, results, signals, updates, queries, memos, activity payloads, user-metadata summaries) with
 * AES-256-GCM before it reaches Temporal. Search attributes never pass through a codec: they stay readable.
 *
 * An encrypted payload is `{metadata: {encoding: 'binary/encrypted', 'encryption-key-id': <id>}, data}` where data is
 * `iv (12 bytes) · ciphertext · tag (16 bytes)` and the plaintext is the whole original Payload in protobuf binary,
 * so its own encoding and metadata come back on decode. The key id is the additional authenticated data: a payload
 * whose metadata names another id than the one that sealed it fails.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import type { Payload, PayloadCodec } from '@temporalio/common';
import proto from '@temporalio/proto';

const { Payload: PayloadMessage } = proto.temporal.api.common.v1;

/** The `encoding` metadata of a payload this codec sealed. */
export const ENCRYPTED_ENCODING = 'binary/encrypted';
/** The metadata key naming the key that sealed a payload. */
export const KEY_ID_METADATA_KEY = 'encryption-key-id';

const ALGORITHM = 'aes-256-gcm';
const IV_BYTES = 12;
const TAG_BYTES = 16;
/** AES-256 takes a key of 32 bytes. */
export const KEY_BYTES = 32;

/** The keys a codec holds: every id it can decrypt, and the one new payloads are sealed with. */
export interface CodecKeyRing {
  /** The id new payloads are encrypted with; one of `keys`. */
  current: string;
  keys: ReadonlyMap<string, Uint8Array>;
}

/** Thrown on decode when an encrypted payload cannot be opened: unknown key id, tampered or truncated data. */
export class PayloadDecryptionError extends Error {
  override name = 'PayloadDecryptionError';
}

const utf8 = new TextEncoder();
const text = new TextDecoder();

/** The AES-256-GCM codec over a key ring; payloads of another encoding pass through decode unchanged. */
export class EncryptionCodec implements PayloadCodec {
  private readonly current: { id: string; key: Uint8Array };

  constructor(private readonly ring: CodecKeyRing) {
    const key = ring.keys.get(ring.current);
    if (!key) throw new Error(`the key ring has no key '${ring.current}' to encrypt with`);
    for (const [id, candidate] of ring.keys) {
      if (candidate.length !== KEY_BYTES)
        throw new Error(`key '${id}' has ${candidate.length} bytes, not ${KEY_BYTES}`);
    }
    this.current = { id: ring.current, key };
  }

  async encode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((payload) => this.seal(payload));
  }

  async decode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((payload) => this.open(payload));
  }

  private seal(payload: Payload): Payload {
    const { id, key } = this.current;
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv(ALGORITHM, key, iv, { authTagLength: TAG_BYTES });
    cipher.setAAD(utf8.encode(id));
    const plaintext = PayloadMessage.encode(payload).finish();
    const sealed = Buffer.concat([iv, cipher.update(plaintext), cipher.final(), cipher.getAuthTag()]);
    return {
      metadata: { encoding: utf8.encode(ENCRYPTED_ENCODING), [KEY_ID_METADATA_KEY]: utf8.encode(id) },
      data: new Uint8Array(sealed),
    };
  }

  private open(payload: Payload): Payload {
    const encoding = payload.metadata?.encoding;
    if (!encoding || text.decode(encoding) !== ENCRYPTED_ENCODING) return payload;
    const idBytes = payload.metadata?.[KEY_ID_METADATA_KEY];
    if (!idBytes) throw new PayloadDecryptionError(`an encrypted payload carries no '${KEY_ID_METADATA_KEY}' metadata`);
    const id = text.decode(idBytes);
    const key = this.ring.keys.get(id);
    if (!key) {
      const held = [...this.ring.keys.keys()].map((k) => `'${k}'`).join(', ');
      throw new PayloadDecryptionError(
        `a payload is encrypted with key id '${id}', which is not in the key file (it holds ${held}): add that key back to decrypt it`,
      );
    }
    const data = payload.data ?? new Uint8Array();
    if (data.length < IV_BYTES + TAG_BYTES) {
      throw new PayloadDecryptionError(
        `an encrypted payload (key id '${id}') is ${data.length} bytes, too short to be one`,
      );
    }
    const decipher = createDecipheriv(ALGORITHM, key, data.subarray(0, IV_BYTES), { authTagLength: TAG_BYTES });
    decipher.setAAD(idBytes);
    decipher.setAuthTag(data.subarray(data.length - TAG_BYTES));
    let plaintext: Buffer;
    try {
      plaintext = Buffer.concat([decipher.update(data.subarray(IV_BYTES, data.length - TAG_BYTES)), decipher.final()]);
    } catch {
      throw new PayloadDecryptionError(
        `an encrypted payload failed authentication with key '${id}': it was altered, or sealed with another key under that id`,
      );
    }
    // A plain object, not a message of this protobufjs root: the SDK's own root reads it back.
    const inner = PayloadMessage.decode(plaintext);
    const external = inner.externalPayloads.length > 0 ? { externalPayloads: inner.externalPayloads } : {};
    return { metadata: { ...inner.metadata }, data: inner.data, ...external };
  }
}
