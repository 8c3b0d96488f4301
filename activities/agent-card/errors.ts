/**
 * How reading an agent's card fails, for the card reader beside it (./card.ts) and the two that read cards: the
 * bridge (a raise answers 502, src/web/problem.ts) and the lapse delivery (retried on some reasons and not on others).
 */

/**
 * Why an agent's card could not be read. The last four are the guarded fetch's refusals (../outbound/guarded-fetch.ts):
 * the outbound address policy, a redirect, a card over the size cap, a URL it cannot fetch.
 */
export type CardFailure =
  'network' | 'timeout' | 'http' | 'not-json' | 'not-a-card' | 'denied-address' | 'redirect' | 'too-large' | 'bad-url';

/** The agent's card could not be fetched or read; its message is safe to show the agent (no address, nothing served). */
export class CardUnreachableError extends Error {
  constructor(
    message: string,
    readonly reason: CardFailure = 'network',
    /** The HTTP status the card URL answered, when `reason` is `http`. */
    readonly status?: number,
  ) {
    super(message);
    this.name = new.target.name;
  }
}
