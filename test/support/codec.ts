/**
 * Payload encryption for tests: fresh random keys, the codec over them, and payloads in the protobuf JSON of the
 * codec server protocol.
 */
import { randomBytes } from 'node:crypto';
import type { Payload } from '@temporalio/common';
import { EncryptionCodec, type CodecKeyRing } from '../../src/temporal/encryption-codec.js';

/** A key ring of fresh random keys under `ids`, encrypting with `current` (the first id by default). */
export function randomKeyRing(ids: string[], current = ids[0]!): CodecKeyRing {
  return { current, keys: new Map(ids.map((id) => [id, new Uint8Array(randomBytes(32))])) };
}

/** The codec over a ring of fresh keys. */
export const randomCodec = (ids: string[] = ['test-key']): EncryptionCodec => new EncryptionCodec(randomKeyRing(ids));

/** A payload as the codec server protocol carries it: metadata values and data in base64. */
export interface PayloadJson {
  metadata?: Record<string, string>;
  data?: string;
}

export function payloadToJson(payload: Payload): PayloadJson {
  const base64 = (bytes: Uint8Array | null | undefined) => Buffer.from(bytes ?? []).toString('base64');
  return {
    metadata: Object.fromEntries(Object.entries(payload.metadata ?? {}).map(([key, value]) => [key, base64(value)])),
    data: base64(payload.data),
  };
}

/** The metadata value of a JSON payload as text. */
export const metadataText = (payload: PayloadJson, key: string): string | undefined => {
  const value = payload.metadata?.[key];
  return value === undefined ? undefined : Buffer.from(value, 'base64').toString('utf8');
};

/** The data of a JSON payload as text. */
export const dataText = (payload: PayloadJson): string => Buffer.from(payload.data ?? '', 'base64').toString('utf8');
