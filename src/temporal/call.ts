/** Runs `fn` (which makes Temporal calls through its client) under a deadline: src/service/temporal-call.ts makes one. */
export type TemporalCall = <T>(fn: () => Promise<T>, timeoutMs?: number) => Promise<T>;
