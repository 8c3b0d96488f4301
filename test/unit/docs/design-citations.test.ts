/**
 * Every "DESIGN x.y" (and "DESIGN x", "design.md x.y") cited in the code, the tests and the docs names a section of
 * docs/design.md (`## x.` or `### x.y`), and every link into design.md (`design.md#anchor`) names one of its headings:
 * a section renumbered or removed fails here, not in a reader's hands.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const DESIGN = 'docs/design.md';

/** Where citations are looked for: the folders of the code, the tests and the docs, and the files at the top. */
const FOLDERS = ['src', 'workflows', 'activities', 'core', 'dev', 'test', 'bench', 'docs', 'demo', 'deploy', 'spec'];
const TOP_FILES = ['README.md', 'BENCHMARKS.md', 'docker-compose.yml', 'Dockerfile'];
/** Recorded histories and bench results: data, not prose. */
const SKIPPED = new Set(['test/histories', 'bench/results', 'node_modules']);
const TEXT = /\.(ts|js|mjs|md|yml|yaml|sh)$/;

function filesUnder(folder: string): string[] {
  const files: string[] = [];
  for (const entry of readdirSync(path.join(root, folder))) {
    const relative = `${folder}/${entry}`;
    if (SKIPPED.has(relative)) continue;
    if (statSync(path.join(root, relative)).isDirectory()) files.push(...filesUnder(relative));
    else if (TEXT.test(entry)) files.push(relative);
  }
  return files;
}

/** The section numbers of design.md: `## 3. Semantics` gives 3, `### 3.2 Facts and matching` gives 3.2. */
function sectionsOf(markdown: string): Set<string> {
  const sections = new Set<string>();
  for (const [, number] of markdown.matchAll(/^## (\d+)\. /gm)) sections.add(number!);
  for (const [, number] of markdown.matchAll(/^### (\d+\.\d+) /gm)) sections.add(number!);
  return sections;
}

/** The anchors GitHub gives design.md's headings: lower case, punctuation dropped, spaces as hyphens. */
function anchorsOf(markdown: string): Set<string> {
  const slug = (heading: string) =>
    heading
      .toLowerCase()
      .replace(/[^\p{L}\p{N} _-]/gu, '')
      .replace(/ /g, '-');
  return new Set([...markdown.matchAll(/^#{1,6} (.+)$/gm)].map(([, heading]) => slug(heading!.trim())));
}

/**
 * The sections a text cites, with their lines: `DESIGN 3.2`, `DESIGN section 4`, `design.md 3.5`, and each number of
 * a list or range (`DESIGN 3.1, 3.2, 3.6, 4`, `DESIGN 3.3–3.5`).
 */
function citationsIn(text: string): Array<{ line: number; section: string; cited: string }> {
  const found: Array<{ line: number; section: string; cited: string }> = [];
  const citation = /\b(?:DESIGN|design\.md)(?: section)? (\d+(?:\.\d+)*(?:\s*(?:,|–|-|and|or)\s*\d+(?:\.\d+)*)*)/g;
  for (const match of text.matchAll(citation)) {
    const line = text.slice(0, match.index).split('\n').length;
    for (const section of match[1]!.split(/\s*(?:,|–|-|and|or)\s*/)) found.push({ line, section, cited: match[0] });
  }
  return found;
}

describe('DESIGN citations', () => {
  const design = readFileSync(path.join(root, DESIGN), 'utf8');
  const sections = sectionsOf(design);
  const files = [...FOLDERS.flatMap(filesUnder), ...TOP_FILES];

  it('reads the sections of design.md', () => {
    expect([...sections]).toEqual([
      '1',
      '2',
      '3',
      '4',
      '5',
      '6',
      '7',
      '3.1',
      '3.2',
      '3.3',
      '3.4',
      '3.5',
      '3.6',
      '3.7',
      '3.8',
      '6.1',
    ]);
  });

  it('name a section of design.md, wherever they are cited', () => {
    let cited = 0;
    const broken: string[] = [];
    for (const file of files) {
      for (const { line, section, cited: text } of citationsIn(readFileSync(path.join(root, file), 'utf8'))) {
        cited++;
        if (!sections.has(section)) broken.push(`${file}:${line}: ${text} (no section ${section})`);
      }
    }
    expect(cited).toBeGreaterThan(100);
    expect(broken).toEqual([]);
  });

  it('link only to headings design.md has', () => {
    const anchors = anchorsOf(design);
    const broken: string[] = [];
    for (const file of files.filter((name) => name.endsWith('.md'))) {
      const text = readFileSync(path.join(root, file), 'utf8');
      const own = file === DESIGN ? [...text.matchAll(/\]\(#([^)\s]+)\)/g)] : [];
      for (const match of [...text.matchAll(/design\.md#([^)\s]+)/g), ...own]) {
        if (!anchors.has(match[1]!)) broken.push(`${file}: #${match[1]}`);
      }
    }
    expect(broken).toEqual([]);
  });
});

describe('the citation check', () => {
  // The cited words are built here, so that this file's own text cites nothing.
  const cite = (rest: string) => ['DESIGN', rest].join(' ');

  it('reads a section, a list, a range and the spelled-out forms', () => {
    const text = [cite('3.2.'), cite('3.1, 3.2, 4'), cite('3.3–3.5'), cite('section 4'), 'design.md 3.5'].join('\n');
    expect(citationsIn(text).map(({ line, section }) => `${line}:${section}`)).toEqual([
      '1:3.2',
      '2:3.1',
      '2:3.2',
      '2:4',
      '3:3.3',
      '3:3.5',
      '4:4',
      '5:3.5',
    ]);
  });

  it('finds the sections a citation names that design.md lacks, a subsection among them', () => {
    const sections = sectionsOf(readFileSync(path.join(root, DESIGN), 'utf8'));
    const text = `an overdue check (${cite('3.9')}), a rule (${cite('3.2.1')})`;
    const missing = citationsIn(text).filter(({ section }) => !sections.has(section));
    expect(missing.map(({ section }) => section)).toEqual(['3.9', '3.2.1']);
  });
});
