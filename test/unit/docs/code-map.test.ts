/**
 * docs/code-map.md against the code: every `file:name` it cites names a file that exists and declares that name
 * (a function, class, variable, interface or type, a method or field, or a function-valued property of an object),
 * `A.b` a `b` declared inside `A`. Read with the TypeScript parser, so a name the file only calls does not count.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const CODE_MAP = 'docs/code-map.md';

/** A backticked `path/to/file.ts` or `path/to/file.ts:name` (`.js`, `.mjs` too; `name` may be dotted). */
const REFERENCE = /^([\w.-]+(?:\/[\w.-]+)+\.(?:ts|js|mjs))(?::([\w$]+(?:\.[\w$]+)*))?$/;

/** The references of a markdown text, in order. */
function referencesOf(markdown: string): Array<{ file: string; name?: string; text: string }> {
  const found: Array<{ file: string; name?: string; text: string }> = [];
  for (const [, text] of markdown.matchAll(/`([^`\s]+)`/g)) {
    const match = REFERENCE.exec(text!);
    if (match) found.push({ file: match[1]!, ...(match[2] ? { name: match[2] } : {}), text: text! });
  }
  return found;
}

/** The name a node declares, if it is a declaration a code map may cite. */
function declaredName(node: ts.Node): string | undefined {
  const named =
    ts.isFunctionDeclaration(node) ||
    ts.isClassDeclaration(node) ||
    ts.isInterfaceDeclaration(node) ||
    ts.isTypeAliasDeclaration(node) ||
    ts.isEnumDeclaration(node) ||
    ts.isMethodDeclaration(node) ||
    ts.isMethodSignature(node) ||
    ts.isPropertyDeclaration(node) ||
    ts.isPropertySignature(node) ||
    ts.isGetAccessorDeclaration(node) ||
    ts.isSetAccessorDeclaration(node) ||
    ts.isVariableDeclaration(node) ||
    // An object's property counts only when it holds a function (`storedFacts: (input) => ...`), not any key.
    (ts.isPropertyAssignment(node) &&
      (ts.isArrowFunction(node.initializer) || ts.isFunctionExpression(node.initializer)));
  if (!named) return undefined;
  const name = (node as ts.NamedDeclaration).name;
  return name && (ts.isIdentifier(name) || ts.isPrivateIdentifier(name) || ts.isStringLiteral(name))
    ? name.text
    : undefined;
}

/** The declarations named `name` anywhere below `scope` (not `scope` itself). */
function declarationsIn(scope: ts.Node, name: string): ts.Node[] {
  const found: ts.Node[] = [];
  const visit = (node: ts.Node) => {
    if (declaredName(node) === name) found.push(node);
    ts.forEachChild(node, visit);
  };
  ts.forEachChild(scope, visit);
  return found;
}

const parsed = new Map<string, ts.SourceFile>();

/** The file parsed once, as TypeScript or JavaScript by its extension. */
function sourceOf(full: string): ts.SourceFile {
  let source = parsed.get(full);
  if (!source) {
    const kind = full.endsWith('.ts') ? ts.ScriptKind.TS : ts.ScriptKind.JS;
    source = ts.createSourceFile(full, readFileSync(full, 'utf8'), ts.ScriptTarget.Latest, true, kind);
    parsed.set(full, source);
  }
  return source;
}

/** Why `reference` does not hold (undefined when it does): the file is missing, or a name is not declared. */
function unresolved(reference: string): string | undefined {
  const match = REFERENCE.exec(reference);
  if (!match) return `${reference}: not a file:name reference`;
  const [, file, name] = match;
  const full = path.join(root, file!);
  if (!existsSync(full)) return `${reference}: no file ${file}`;
  if (!name) return undefined;
  let scopes: ts.Node[] = [sourceOf(full)];
  for (const part of name.split('.')) {
    scopes = scopes.flatMap((scope) => declarationsIn(scope, part));
    if (scopes.length === 0)
      return `${reference}: ${file} declares no ${name.split('.').length > 1 ? `${part} in ${name}` : part}`;
  }
  return undefined;
}

describe('docs/code-map.md', () => {
  const markdown = readFileSync(path.join(root, CODE_MAP), 'utf8');

  it('has a chain for each flow: raise, the three ways of a fact, lapse, withdraw, resend, record read', () => {
    const headings = [...markdown.matchAll(/^#{2,3} (.+)$/gm)].map(([, heading]) => heading);
    expect(headings).toEqual([
      'Raise',
      'Fact',
      "1. The router's forward (the normal path)",
      '2. The `takeFact` update (`POST /v1/facts?wait=true`)',
      "3. The read of the routers' histories before a lapse",
      'Lapse',
      'Withdraw',
      'Resend',
      'Record read',
    ]);
  });

  it('cites only files that exist and names they declare', () => {
    const references = referencesOf(markdown);
    expect(references.length).toBeGreaterThan(100);
    const broken = references.flatMap(({ text }) => unresolved(text) ?? []);
    expect(broken).toEqual([]);
  });
});

describe('the code map check', () => {
  it('passes a function, a class method, a factory member and a function-valued property', () => {
    expect(unresolved('workflows/expectation.ts:expectationWorkflow')).toBeUndefined();
    expect(unresolved('workflows/expectation-manager.ts:ExpectationManager.readStored')).toBeUndefined();
    expect(unresolved('src/service/ingest.ts:createIngestService.ingest')).toBeUndefined();
    expect(unresolved('activities/client-calls.ts:createClientActivities.storedFacts')).toBeUndefined();
    expect(unresolved('src/ui/dom.js:routeTo')).toBeUndefined();
  });

  it('fails a misspelled name', () => {
    expect(unresolved('workflows/expectation.ts:expectationWorkflw')).toBe(
      'workflows/expectation.ts:expectationWorkflw: workflows/expectation.ts declares no expectationWorkflw',
    );
  });

  it('fails a name the file only calls, and a method of another class', () => {
    expect(unresolved('workflows/expectation.ts:setHandler')).toMatch(/declares no setHandler$/);
    expect(unresolved('workflows/expectation-manager.ts:ExpectationManager.flush')).toMatch(
      /declares no flush in ExpectationManager.flush$/,
    );
  });

  it('fails a file that does not exist', () => {
    expect(unresolved('src/outbound/guarded-fetch.ts:createGuardedFetch')).toBe(
      'src/outbound/guarded-fetch.ts:createGuardedFetch: no file src/outbound/guarded-fetch.ts',
    );
  });
});
