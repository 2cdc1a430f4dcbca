// Shared helpers for the tokenizer parity scripts.
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

export const scriptDir = path.dirname(fileURLToPath(import.meta.url));
export const repoRoot = path.resolve(scriptDir, '..', '..');
export const testdataDir = path.join(repoRoot, 'pkg/preprocessor/tokenizer/testdata');
export const corpusDir = path.join(testdataDir, 'corpus');
export const goldenDir = path.join(testdataDir, 'golden');
export const defaultModelsRoot = path.resolve(repoRoot, '..', 'shared/testdata/models');

// loadTokenizers finds the npm `tokenizers` package. Search order:
//   1. $HFTOK_NODE_MODULES (a node_modules directory, e.g. /tmp/hftok/node_modules)
//   2. scripts/tokenizer/node_modules (from `npm install` here; gitignored)
//   3. $NODE_PATH / the usual Node resolution.
export function loadTokenizers() {
  const tries = [];
  if (process.env.HFTOK_NODE_MODULES) tries.push(path.join(path.resolve(process.env.HFTOK_NODE_MODULES), '_'));
  tries.push(path.join(scriptDir, 'node_modules', '_'));
  tries.push(path.join(scriptDir, '_'));
  let lastErr;
  for (const base of tries) {
    try {
      const req = createRequire(base);
      const mod = req('tokenizers');
      const version = req('tokenizers/package.json').version;
      return { Tokenizer: mod.Tokenizer, version, resolved: req.resolve('tokenizers') };
    } catch (e) {
      lastErr = e;
    }
  }
  throw new Error(
    'cannot load npm package "tokenizers": run `npm install` in scripts/tokenizer, ' +
      'or set HFTOK_NODE_MODULES=/path/to/node_modules (last error: ' + lastErr.message + ')',
  );
}

// parseCorpus splits one corpus file into cases. A line "=====CASE <name>====="
// starts a case; its text runs to (not including) the "\n" before the next
// marker line or the end of the file.
export function parseCorpus(content) {
  const re = /^=====CASE (\S+)=====$/gm;
  const marks = [];
  let m;
  while ((m = re.exec(content)) !== null) marks.push({ name: m[1], start: m.index, bodyStart: m.index + m[0].length + 1 });
  const cases = [];
  for (let i = 0; i < marks.length; i++) {
    const end = i + 1 < marks.length ? marks[i + 1].start : content.length;
    let body = content.slice(marks[i].bodyStart, end);
    if (body.endsWith('\n')) body = body.slice(0, -1);
    if (marks[i].bodyStart > end) body = '';
    cases.push({ name: marks[i].name, text: body });
  }
  return cases;
}

// modelDirs lists model directories (sorted) that contain a tokenizer.json.
export function modelDirs(root) {
  return fs
    .readdirSync(root, { withFileTypes: true })
    .filter((d) => d.isDirectory() && fs.existsSync(path.join(root, d.name, 'tokenizer.json')))
    .map((d) => d.name)
    .sort();
}

export function argValue(name, def) {
  const i = process.argv.indexOf(name);
  return i >= 0 && i + 1 < process.argv.length ? process.argv[i + 1] : def;
}
