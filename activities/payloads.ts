/**
 * Payloads read outside a workflow (memos from visibility, events of a history), decoded as the client decodes
 * them: through its payload codecs (encrypted under WATCHER_CODEC_KEYS_FILE), then its payload converter.
 */
import type { Client } from '@temporalio/client';
import type { temporal } from '@temporalio/proto';

export async function decodePayloads(
  client: Client,
  payloads: temporal.api.common.v1.IPayload[] | null | undefined,
): Promise<unknown[]> {
  const { payloadCodecs, payloadConverter } = client.options.loadedDataConverter;
  let raw = payloads ?? [];
  for (const codec of [...payloadCodecs].reverse()) raw = await codec.decode(raw);
  return raw.map((payload) => payloadConverter.fromPayload(payload));
}
