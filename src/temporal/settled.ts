/**
 * `Promise.all` that waits for every promise before it throws the first rejection. `Promise.all` rejects at the
 * first failure while the other calls run on, with gRPC retries that outlive the request's answer and may fire on a
 * connection closed since (grpc-js then throws "Channel has been shut down" from a timer, an uncaught exception).
 * Every fan-out of Temporal calls made for one request goes through here: nothing started for a request runs on
 * after its answer.
 */
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
