/**
 * The payload codec's key file (WATCHER_CODEC_KEYS_FILE, docs/operations.md "Encrypting payloads"):
 *
 *   {"current": "2026-07", "keys": {"2026-07": "<base64 of 32 random bytes>", "2026-01": "<an older key>"}}
 *
 * New payloads are sealed with `current`; every key listed still opens the payloads it sealed, so a key is retired
 * only once no history that needs it is left.
 */
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { ConfigError } from '../config-error.js';
import { KEY_BYTES, type CodecKeyRing } from './encryption-codec.js';

/** The variable that names the key file; every error about the file starts with it. */
export const CODEC_KEYS_VARIABLE = 'WATCHER_CODEC_KEYS_FILE';

const keyId = z.string().regex(/^[A-Za-z0-9._:-]{1,64}$/, {
  message: 'a key id is 1 to 64 letters, digits, dots, dashes, underscores or colons',
});

const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;
const base64Key = z
  .string()
  .regex(BASE64, { message: 'must be base64 (openssl rand -base64 32)' })
  // Only of base64 (Buffer skips what is not), so that a key is reported once.
  .refine((value) => !BASE64.test(value) || Buffer.from(value, 'base64').length === KEY_BYTES, {
    message: `must be ${KEY_BYTES} bytes once base64-decoded (openssl rand -base64 32)`,
  });

const keyFileSchema = z
  .strictObject({
    current: keyId,
    keys: z.record(keyId, base64Key).refine((keys) => Object.keys(keys).length > 0, { message: 'holds no key' }),
  })
  .refine((file) => Object.hasOwn(file.keys, file.current), {
    message: 'names a key that is not in keys',
    path: ['current'],
  });

/** The key ring of a parsed key file; a ConfigError naming the variable, the file and each bad field otherwise. */
export function parseCodecKeys(raw: unknown, file: string): CodecKeyRing {
  const parsed = keyFileSchema.safeParse(raw);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((issue) => `  ${issue.path.join('.') || '(file)'}: ${issue.message}`);
    throw new ConfigError(`${CODEC_KEYS_VARIABLE}: ${file} is not a valid key file\n${lines.join('\n')}`);
  }
  const keys = new Map(
    Object.entries(parsed.data.keys).map(([id, key]) => [id, new Uint8Array(Buffer.from(key, 'base64'))]),
  );
  return { current: parsed.data.current, keys };
}

/** Reads and validates the key file (at start: a missing or bad file stops the process before it connects). */
export function loadCodecKeys(file: string): CodecKeyRing {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(file, 'utf8'));
  } catch (error) {
    const reason = (error as NodeJS.ErrnoException).code === 'ENOENT' ? 'does not exist' : (error as Error).message;
    throw new ConfigError(`${CODEC_KEYS_VARIABLE}: ${file}: ${reason}`);
  }
  return parseCodecKeys(raw, file);
}
