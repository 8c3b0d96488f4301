/**
 * The OpenAPI document says of a request what the bridge's parse decides, where schemathesis found it did not
 * (docs/api.md "Checked with schemathesis"): an identifier with a control character is refused by the schema too, and
 * a lenient field (`extensions` of an A2A object, read as absent when malformed) takes any value in the schema too.
 */
import { describe, expect, it } from 'vitest';
import { openApiDocument } from '../../../../src/http/openapi.js';
import { parseA2AEvent } from '../../../../src/schemas/a2a.js';
import { reportedFactSchema } from '../../../../core/schemas/extension.js';
import { listQuerySchema } from '../../../../src/schemas/http.js';
import { validatorOf } from '../../../support/openapi.js';

const doc = openApiDocument() as Record<string, any>;
const component = (name: string) => validatorOf(doc, { $ref: `#/components/schemas/${name}` });

describe('identifiers', () => {
  const subject = { type: 'shipment', id: 'SHP-1' };
  const fact = { factKey: 'shipment/SHP-1/delivered', observedAt: '2026-12-01T00:00:00Z', subject };

  it('with a control character are refused by the document as by the bridge', () => {
    const bad = { ...fact, factKey: 'shipment/\u0007', subject: { type: 'ship\u007fment', id: 'SHP-1' } };

    expect(component('ReportedFact').check(bad)).toHaveLength(2);
    const issues = reportedFactSchema.safeParse(bad).error?.issues ?? [];
    expect(issues.map((issue) => issue.path.join('/'))).toEqual(['factKey', 'subject/type']);
  });

  it('without one are taken by both', () => {
    expect(component('ReportedFact').check({ ...fact, factKey: 'ключ/☃' })).toEqual([]);
    expect(reportedFactSchema.safeParse({ ...fact, factKey: 'ключ/☃' }).success).toBe(true);
  });

  it('in a list filter carry the same pattern', () => {
    const kind = doc.paths['/v1/expectations'].get.parameters.find((p: { name: string }) => p.name === 'kind');

    expect(new RegExp(kind.schema.pattern).test('delivery')).toBe(true);
    expect(new RegExp(kind.schema.pattern).test('deli\u0000very')).toBe(false);
    expect(listQuerySchema.safeParse({ kind: 'deli\u0000very' }).success).toBe(false);
  });
});

describe('a malformed extensions list of an A2A object', () => {
  const event = (extensions: unknown) => ({
    kind: 'artifact-update',
    taskId: 'task-1',
    contextId: 'ctx-1',
    artifact: { artifactId: 'a-1', parts: [{ kind: 'text', text: 'plan' }], extensions },
  });

  it('is taken by the bridge, read as absent', () => {
    expect(parseA2AEvent(event([null, 3])).success).toBe(true);
  });

  it('is taken by the document too, which still names the list of URIs it reads', () => {
    expect(component('A2AEvent').check(event([null, 3]))).toEqual([]);
    expect(component('A2AEvent').check(event(['https://rsaxb.com/a2a/expectations/v1']))).toEqual([]);
    const read = '"anyOf":[{"type":"array","items":{"type":"string"}}';
    expect(JSON.stringify(doc.components.schemas.EventV03)).toContain(read);
  });
});
