/** `Promise.all` that waits for every promise before it throws the first rejection. */
// Every fan-out of Temporal calls for one request goes through here: a call left running after the answer retries on
// a closed connection, and grpc-js then throws "Channel has been shut down" from a timer, uncaught.
export async function settled<const P extends readonly Promise<unknown>[]>(
  promises: P,
): Promise<{ -readonly [K in keyof P]: Awaited<P[K]> }> {
  const results = await Promise.allSettled(promises);
  const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) throw failed.reason;
  return results.map((r) => (r as PromiseFulfilledResult<unknown>).value) as {
    -readonly [K in keyof P]: Awaited<P[K]>;
  };
}
