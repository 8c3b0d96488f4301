import { describe, expect, it } from 'vitest';
import { problemType, retryAfterOf, toProblem } from '../../../../src/web/problem.js';
import { CardUnreachableError } from '../../../../activities/agent-card/errors.js';
import {
  ConflictError,
  ForbiddenError,
  MalformedBodyError,
  NotFoundError,
  PayloadTooLargeError,
  QuotaExceededError,
  RuleViolationError,
  SchemaError,
  summarise,
  TemporalBusyError,
  TemporalUnavailableError,
  TooManyItemsError,
  UnauthenticatedError,
  UnsupportedMediaTypeError,
  WorkerUnavailableError,
} from '../../../../src/service/errors.js';

describe('toProblem', () => {
  it.each([
    [new SchemaError('x'), 400, 'invalid-request', 'The request does not match the schema'],
    [new MalformedBodyError('x'), 400, 'malformed-body', 'The body is not valid JSON'],
    [new UnauthenticatedError('x'), 401, 'unauthenticated', 'No valid bearer token'],
    [new ForbiddenError('x'), 403, 'forbidden', 'Not allowed for this principal'],
    [new NotFoundError('x'), 404, 'not-found', 'Not found'],
    [new ConflictError('x'), 409, 'conflict', 'Expectation id reused with other content'],
    [new PayloadTooLargeError('x'), 413, 'payload-too-large', 'The body is over 1 MiB'],
    [new UnsupportedMediaTypeError('x'), 415, 'unsupported-media-type', 'The body must be JSON'],
    [new RuleViolationError('x'), 422, 'rule-violation', 'A rule of the extension is broken'],
    [new CardUnreachableError('x'), 502, 'agent-card-unreachable', "The agent's card could not be fetched"],
    [new TemporalUnavailableError('x'), 503, 'temporal-unavailable', 'Temporal is unreachable'],
    [new TooManyItemsError('x'), 413, 'too-many-items', 'The request carries more items than one request may'],
    [new TemporalBusyError('x'), 503, 'temporal-busy', 'Temporal is overloaded'],
    [new WorkerUnavailableError('x'), 503, 'worker-unavailable', 'No worker polls the task queue'],
  ])('maps %o to %i', (error, status, slug, title) => {
    expect(toProblem(error)).toEqual({ type: problemType(slug), title, status, detail: 'x' });
  });

  it('maps a quota used up to 429, naming the quota, its limit and Retry-After', () => {
    const error = new QuotaExceededError('x', 'facts-per-minute', 60, 7);

    expect(toProblem(error)).toEqual({
      type: problemType('quota-exceeded'),
      title: "A quota of the principal's is used up",
      status: 429,
      detail: 'x',
      quota: { name: 'facts-per-minute', limit: 60, retryAfterSeconds: 7 },
    });
    expect(retryAfterOf(error)).toBe(7);
  });

  it('gives a Retry-After to 429 and 503 only', () => {
    expect(
      [new TemporalUnavailableError('x'), new TemporalBusyError('x'), new RuleViolationError('x')].map((e) =>
        retryAfterOf(e),
      ),
    ).toEqual([5, 2, undefined]);
  });

  it('carries the field errors, with the rule of a 422', () => {
    const errors = [{ path: 'expectations/0/kind', message: 'undeclared', rule: 'kind-declared' }];

    expect(toProblem(new RuleViolationError('undeclared', errors))).toEqual({
      type: 'urn:expectations-watcher:problem:rule-violation',
      title: 'A rule of the extension is broken',
      status: 422,
      detail: 'undeclared',
      errors,
    });
  });

  it("maps body-parser's too-large error to 413", () => {
    const error = Object.assign(new Error('request entity too large'), { type: 'entity.too.large', status: 413 });

    expect(toProblem(error)).toMatchObject({ status: 413, detail: 'the body is over the limit of 1 MiB' });
  });

  it("maps body-parser's parse error to 400 malformed-body", () => {
    const error = Object.assign(new SyntaxError('Unexpected token'), { type: 'entity.parse.failed', status: 400 });

    expect(toProblem(error)).toMatchObject({ status: 400, type: problemType('malformed-body') });
  });

  it('hides the internals of an unexpected error behind a 500', () => {
    expect(toProblem(new TypeError('secret stack'))).toEqual({
      type: problemType('internal'),
      title: 'Internal error',
      status: 500,
      detail: 'an unexpected error occurred',
    });
  });
});

describe('summarise', () => {
  it('says a single field error with its path', () => {
    expect(summarise([{ path: 'facts/0/observedAt', message: 'bad' }], 'fields are invalid')).toBe(
      'facts/0/observedAt: bad',
    );
  });

  it('counts several', () => {
    expect(
      summarise(
        [
          { path: 'a', message: 'x' },
          { path: 'b', message: 'y' },
        ],
        'rules are broken',
      ),
    ).toBe('2 rules are broken; see errors');
  });
});
