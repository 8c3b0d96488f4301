/** Where a worker with tracing on finds the tracing bundle that `npm run bundle` wrote beside its own. */
import { describe, expect, it } from 'vitest';
import { tracingBundleOf, withLineSourceMap } from '../../../../src/temporal/workflow-bundle.js';

describe('tracingBundleOf', () => {
  it('puts .tracing before the .js of the bundle', () => {
    expect(tracingBundleOf('/app/dist/workflow-bundle.js')).toBe('/app/dist/workflow-bundle.tracing.js');
  });

  it('appends .tracing.js to a name without .js', () => {
    expect(tracingBundleOf('dist/bundle')).toBe('dist/bundle.tracing.js');
  });

  it('keeps a tracing bundle named directly as it is', () => {
    expect(tracingBundleOf('/app/dist/workflow-bundle.tracing.js')).toBe('/app/dist/workflow-bundle.tracing.js');
  });
});

describe('withLineSourceMap', () => {
  const mapOf = (code: string) => {
    const comments = [...code.matchAll(/\/\/# sourceMappingURL=data:application\/json;charset=utf-8;base64,(\S+)/g)];
    expect(comments).toHaveLength(1);
    return JSON.parse(Buffer.from(comments[0]![1]!, 'base64').toString('utf8')) as Record<string, unknown>;
  };
  const webpackMap = Buffer.from(JSON.stringify({ version: 3, sources: ['a.ts'], mappings: 'AAAA;AACA' })).toString(
    'base64',
  );
  const bundle = `line 1\nline 2\nline 3\n//# sourceMappingURL=data:application/json;charset=utf-8;base64,${webpackMap}\n`;

  it('replaces the inline map with one that maps every line of the bundle to itself', () => {
    const lean = withLineSourceMap(bundle);
    const code = lean.slice(0, lean.indexOf('//# sourceMappingURL'));

    expect(code).not.toContain(webpackMap);
    const map = mapOf(lean);
    expect(map).toMatchObject({ version: 3, sources: ['workflow-bundle.js'], file: 'workflow-bundle.js' });
    const segments = String(map.mappings).split(';');
    // Every line of the code before the map has its segment: column 0, source 0, one original line on, column 0.
    expect(segments).toHaveLength(code.trimEnd().split('\n').length);
    expect(segments.slice(1).every((segment) => segment === 'AACA')).toBe(true);
    expect(segments[0]).toBe('AAAA');
  });

  it('is idempotent: a bundle already lean keeps one map', () => {
    expect(mapOf(withLineSourceMap(withLineSourceMap(bundle)))).toEqual(mapOf(withLineSourceMap(bundle)));
  });
});
