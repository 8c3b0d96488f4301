/**
 * What a router does with a subscriber past its bound (core/limits.ts): it does not take it, and withdraws it with a
 * reason that says why, so that the expectation neither waits for facts that would never reach it nor lapses for
 * lack of them. The bridge refuses such a raise before it starts anything (422); this is the router's own guard, for
 * raises that race each other to the last place, so that its state stays within the bound whatever happens.
 */
import { Outbox } from './outbox.js';
import type { WithdrawRequest } from './messages.js';

/** The withdrawals a router owes the subscribers it refused, one per subscriber, sent by its main loop. */
export const refusals = (): Outbox<WithdrawRequest> => new Outbox<WithdrawRequest>((pending, next) => pending ?? next);
