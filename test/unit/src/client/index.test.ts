/**
 * The client is what agent authors install: importing `expectations-watcher/client` must load no Temporal package,
 * no Express and nothing of the bridge. The lint room (eslint.config.js) checks src/client/'s own imports; this
 * follows the whole run-time graph, through core/schemas/ and what they import, as TypeScript emits it (type-only
 * imports erased).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

/** Every file and package the module at `entry` loads at run time. */
function runtimeGraph(entry: string): { files: string[]; packages: string[] } {
  const files = new Set<string>();
  const packages = new Set<string>();
  const visit = (file: string) => {
    if (files.has(file)) return;
    files.add(file);
    const { outputText } = ts.transpileModule(readFileSync(file, 'utf8'), {
      compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022, verbatimModuleSyntax: false },
      fileName: file,
    });
    for (const { fileName: specifier } of ts.preProcessFile(outputText, true, true).importedFiles) {
      if (specifier.startsWith('.')) visit(path.resolve(path.dirname(file), specifier.replace(/\.js$/, '.ts')));
      else packages.add(specifier);
    }
  };
  visit(path.resolve(entry));
  return {
    files: [...files].map((file) => path.relative(process.cwd(), file)).sort(),
    packages: [...packages].sort(),
  };
}

describe('the client at run time', () => {
  const graph = runtimeGraph('src/client/index.ts');

  it('loads no package but zod', () => {
    expect(graph.packages).toEqual(['zod']);
  });

  it('loads the client, the extension schema and the pure duration arithmetic, nothing of the bridge', () => {
    expect(graph.files).toEqual([
      'core/duration-math.ts',
      'core/limits.ts',
      'core/schemas/extension.ts',
      'src/client/builders.ts',
      'src/client/errors.ts',
      'src/client/index.ts',
      'src/client/lapse-task.ts',
      'src/client/retry.ts',
      'src/client/watcher-client.ts',
    ]);
  });

  it('is what the package exports as ./client', () => {
    const manifest = JSON.parse(readFileSync('package.json', 'utf8')) as { exports: Record<string, string> };

    expect(manifest.exports['./client']).toBe('./src/client/index.ts');
  });
});
