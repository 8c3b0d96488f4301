import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { FACT_ROUTER_SHARDS, shardOf } from '../../../core/fact-shards.js';
import {
  expectationLinks,
  expectationWorkflowId,
  factRouterWorkflowId,
  keywordValue,
  subjectKey,
  subjectRouterWorkflowId,
} from '../../../core/ids.js';

describe('workflow ids', () => {
  it('are the business keys of DESIGN 2', () => {
    expect(expectationWorkflowId('EXP-42')).toBe('expectation:EXP-42');
    expect(factRouterWorkflowId('shipment/SHP-1/delivered', 'expectations')).toMatch(/^facts:expectations:\d{3}$/);
    expect(subjectRouterWorkflowId({ type: 'ship ment', id: 'a:b/c' }, 'expectations')).toMatch(
      /^facts:expectations:\d{3}$/,
    );
  });

  it('replace an id over 255 bytes (SQL persistence columns) by the sha256 of the whole original', () => {
    const long = 'é'.repeat(130); // 260 bytes
    const expected = createHash('sha256').update(`expectation:${long}`).digest('hex');

    expect(expectationWorkflowId(long)).toBe(`expectation:sha256:${expected}`);
    expect(expectationWorkflowId('x'.repeat(243))).toBe(`expectation:${'x'.repeat(243)}`);
    expect(Buffer.byteLength(factRouterWorkflowId('k', 'q'.repeat(10_000)))).toBeLessThanOrEqual(255);
  });

  it('keep the hashed form for hashes: a literal id, key or subject that reads like one is hashed too', () => {
    const long = 'x'.repeat(300);
    const hashedExpectation = expectationWorkflowId(long);
    const literal = hashedExpectation.slice('expectation:'.length); // `sha256:<hex>`, as an agent may send it
    const longSubject = { type: 'shipment', id: long };
    const hashedSubjectKey = subjectKey(longSubject);

    expect(expectationWorkflowId(literal)).not.toBe(hashedExpectation);
    expect(expectationWorkflowId(literal)).toMatch(/^expectation:sha256:[0-9a-f]{64}$/);
    expect(keywordValue(keywordValue(long))).not.toBe(keywordValue(long));
    expect(subjectKey({ type: 'shipment', id: hashedSubjectKey.slice('shipment/'.length) })).not.toBe(hashedSubjectKey);
    // Every other id stays as typed.
    expect(expectationWorkflowId('sha256-report')).toBe('expectation:sha256-report');
    expect(keywordValue('shipment/sha256')).toBe('shipment/sha256');
  });

  it('bound keyword search attribute values, keeping the subject type filterable', () => {
    const id = 'i'.repeat(300);

    expect(subjectKey({ type: 'shipment', id: 'SHP-1' })).toBe('shipment/SHP-1');
    expect(subjectKey({ type: 'shipment', id })).toBe(
      `shipment/sha256:${createHash('sha256').update(id).digest('hex')}`,
    );
    expect(keywordValue('k'.repeat(255))).toBe('k'.repeat(255));
    expect(keywordValue('k'.repeat(256))).toMatch(/^sha256:[0-9a-f]{64}$/);
  });

  it('link an expectation to its routers, after and anchor targets', () => {
    const links = expectationLinks(
      {
        expectationId: 'e2',
        subject: { type: 'shipment', id: 'SHP-1' },
        satisfiedBy: { factKey: 'k' },
        after: ['e1'],
        anchor: { expectationId: 'e0' },
      },
      'expectations',
    );

    expect(links).toEqual({
      self: 'expectation:e2',
      factRouter: factRouterWorkflowId('k', 'expectations'),
      subjectRouter: subjectRouterWorkflowId({ type: 'shipment', id: 'SHP-1' }, 'expectations'),
      after: { e1: 'expectation:e1' },
      anchor: 'expectation:e0',
      supersedes: undefined,
    });
  });
});

describe('subject routers', () => {
  it('are routers of the task queue, so two deployments in one namespace share none', () => {
    const subject = { type: 'shipment', id: 'SHP-1' };
    expect(subjectRouterWorkflowId(subject, 'blue')).toMatch(/^facts:blue:\d{3}$/);
    expect(subjectRouterWorkflowId(subject, 'green')).toMatch(/^facts:green:\d{3}$/);
    expect(subjectRouterWorkflowId(subject, 'blue').slice('facts:blue'.length)).toBe(
      subjectRouterWorkflowId(subject, 'green').slice('facts:green'.length),
    );
  });
});

describe('fact routers', () => {
  it('hash a key by its UTF-8 bytes (FNV-1a), the same as TextEncoder would give them', () => {
    const fnv = (bytes: Uint8Array) =>
      bytes.reduce((hash, byte) => Math.imul(hash ^ byte, 0x01000193) >>> 0, 0x811c9dc5);
    for (const key of ['shipment/SHP-1/delivered', 'é😀✓', 'a\ud800b', '']) {
      expect(shardOf(key), key).toBe(fnv(new TextEncoder().encode(key)) % FACT_ROUTER_SHARDS);
    }
  });

  it('spread keys over every router', () => {
    const shards = new Set(Array.from({ length: 20_000 }, (_, i) => shardOf(`shipment/S-${i}/delivered`)));

    expect(shards.size).toBe(FACT_ROUTER_SHARDS);
  });
});
