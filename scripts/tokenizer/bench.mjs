// bench.mjs measures HF npm `tokenizers` on the parity corpus, for side-by-side
// comparison with the Go benchmarks (pkg/preprocessor/tokenizer/bench_test.go).
//
// Text: every case of testdata/golden/cases.json joined with "\n" (the same
// text as the Go benchmarks), split into ~1 KB chunks with the same rule as
// chunkText in bench_test.go.
//
// Per model it prints:
//   load ms       Tokenizer.fromFile (best of --load-runs)
//   batch MB/s    encodeBatch(chunks) — rayon threads = RAYON_NUM_THREADS (default 1 here)
//   seq MB/s      chunks encoded one by one (await each; includes N-API call cost)
//   whole MB/s    the whole text in one encode call
// MB = 1e6 bytes of input (as Go's b.SetBytes). Best of --runs.
//
// Usage: node bench.mjs [--models m1,m2|all] [--runs 5] [--load-runs 3] [--models-dir DIR]
//        RAYON_NUM_THREADS=2 node bench.mjs     # multi-threaded batch
import fs from 'node:fs';
import path from 'node:path';
import os from 'node:os';
import { loadTokenizers, modelDirs, argValue, goldenDir, defaultModelsRoot } from './lib.mjs';

if (!process.env.RAYON_NUM_THREADS) process.env.RAYON_NUM_THREADS = '1'; // before the binding loads
const { Tokenizer, version } = loadTokenizers();

const modelsRoot = path.resolve(argValue('--models-dir', process.env.MODELS_DIR || defaultModelsRoot));
const defaults = ['llama-3-8b-instruct', 'qwen2.5-instruct', 'llama-2-hf-internal-testing', 'bert-base-uncased', 't5-small', 'phi-2', 'qwen3'];
let models = argValue('--models', defaults.join(','));
models = models === 'all' ? modelDirs(modelsRoot) : models.split(',');
const runs = Number(argValue('--runs', '5'));
const loadRuns = Number(argValue('--load-runs', '3'));

const cases = JSON.parse(fs.readFileSync(path.join(goldenDir, 'cases.json'), 'utf8')).cases;
const text = cases.map((c) => c.text).join('\n');
const buf = Buffer.from(text, 'utf8');
const bytes = buf.length;

// chunkText mirrors bench_test.go: ~n bytes, cut after the last '\n' (or ' ')
// in the second half of the window, else at n moved forward to a rune start.
function chunkText(b, n) {
  const out = [];
  let s = 0;
  while (s < b.length) {
    if (b.length - s <= n) { out.push(b.subarray(s).toString('utf8')); break; }
    const win = b.subarray(s, s + n);
    let cut = -1;
    const nl = win.lastIndexOf(0x0a);
    const sp = win.lastIndexOf(0x20);
    if (nl >= n / 2) cut = nl + 1;
    else if (sp >= n / 2) cut = sp + 1;
    else { cut = n; while (s + cut < b.length && (b[s + cut] & 0xc0) === 0x80) cut++; }
    out.push(b.subarray(s, s + cut).toString('utf8'));
    s += cut;
  }
  return out;
}
const chunks = chunkText(buf, 1024);

const mbps = (ms) => (bytes / 1e6) / (ms / 1e3);
const now = () => Number(process.hrtime.bigint()) / 1e6;

console.log(`npm tokenizers ${version}, node ${process.version}, RAYON_NUM_THREADS=${process.env.RAYON_NUM_THREADS}, ${os.cpus().length} CPUs (${os.cpus()[0].model})`);
console.log(`corpus: ${bytes} bytes, ${chunks.length} chunks of ~1 KB, best of ${runs}`);
console.log(['model', 'load ms', 'batch MB/s', 'batch Mtok/s', 'seq MB/s', 'whole MB/s', 'tokens'].join('\t'));
for (const m of models) {
  const file = path.join(modelsRoot, m, 'tokenizer.json');
  if (!fs.existsSync(file)) { console.log(`${m}\t(absent)`); continue; }
  let load = Infinity, tok;
  for (let i = 0; i < loadRuns; i++) {
    const t0 = now();
    tok = Tokenizer.fromFile(file);
    load = Math.min(load, now() - t0);
  }
  const opts = { addSpecialTokens: false };
  await tok.encodeBatch(chunks.slice(0, 8), opts); // warm up
  let batch = Infinity, seq = Infinity, whole = Infinity, ntok = 0;
  for (let r = 0; r < runs; r++) {
    let t0 = now();
    const encs = await tok.encodeBatch(chunks, opts);
    batch = Math.min(batch, now() - t0);
    ntok = encs.reduce((a, e) => a + e.getIds().length, 0);
    t0 = now();
    for (const c of chunks) await tok.encode(c, null, opts);
    seq = Math.min(seq, now() - t0);
    t0 = now();
    await tok.encode(text, null, opts);
    whole = Math.min(whole, now() - t0);
  }
  console.log([m, load.toFixed(0), mbps(batch).toFixed(2), (ntok / 1e6 / (batch / 1e3)).toFixed(2), mbps(seq).toFixed(2), mbps(whole).toFixed(2), ntok].join('\t'));
}
