/** A protobuf Timestamp (a history event's time, a poller's last access) as epoch milliseconds. */
export function timestampMs(value: { seconds?: unknown; nanos?: number | null }): number {
  return Number(value.seconds ?? 0) * 1000 + Math.floor((value.nanos ?? 0) / 1e6);
}
