// goldens.mjs computes the HF `tokenizers` (npm) ground truth for the Go
// tokenizer parity test.
//
//  1. Collects the added tokens of every <models>/*/tokenizer.json and writes
//     testdata/corpus/special_tokens.txt (tokens embedded in text).
//  2. Parses every testdata/corpus/*.txt into cases (see lib.mjs parseCorpus)
//     and writes testdata/golden/cases.json (names + texts).
//  3. For every model and case: ids with addSpecialTokens false and true, and
//     decode(idsWithSpecial, false) / decode(idsWithSpecial, true); writes
//     testdata/golden/<model>.json.
//
// Usage: node goldens.mjs [--models <dir>] [--only <model>[,<model>...]]
//                         [--corpus-dir <dir>] [--golden-dir <dir>]
//   default models dir: <repo>/../shared/testdata/models
import fs from 'node:fs';
import path from 'node:path';
import crypto from 'node:crypto';
import {
  loadTokenizers, parseCorpus, modelDirs, argValue,
  corpusDir as defaultCorpusDir, goldenDir as defaultGoldenDir, defaultModelsRoot,
} from './lib.mjs';

// --corpus-dir / --golden-dir allow throw-away stress runs outside the repo
// (the Go test reads them with TOKENIZER_GOLDEN_DIR).
const corpusDir = path.resolve(argValue('--corpus-dir', defaultCorpusDir));
const goldenDir = path.resolve(argValue('--golden-dir', defaultGoldenDir));
const corpusFiles = () => fs.readdirSync(corpusDir).filter((f) => f.endsWith('.txt')).sort();

const modelsRoot = path.resolve(argValue('--models', process.env.MODELS_DIR || defaultModelsRoot));
const only = argValue('--only', '');
const { Tokenizer, version, resolved } = loadTokenizers();
console.log(`tokenizers ${version} (${resolved})`);
console.log(`models: ${modelsRoot}`);

const models = modelDirs(modelsRoot);
if (models.length === 0) throw new Error('no model dirs with tokenizer.json under ' + modelsRoot);

// ------------------------------------------------------ special_tokens.txt
// Up to MAX_PER_MODEL added tokens per model (all when fewer; otherwise all
// special ones first, evenly sampled by id), deduplicated across models.
const MAX_PER_MODEL = 48;
function sample(list, n) {
  if (list.length <= n) return list;
  const out = [];
  for (let i = 0; i < n; i++) out.push(list[Math.floor((i * list.length) / n)]);
  return out;
}
const seen = new Set();
const perModel = [];
for (const m of models) {
  const j = JSON.parse(fs.readFileSync(path.join(modelsRoot, m, 'tokenizer.json'), 'utf8'));
  const added = (j.added_tokens || []).slice().sort((a, b) => a.id - b.id);
  const special = added.filter((t) => t.special);
  const normal = added.filter((t) => !t.special);
  let chosen = sample(special, MAX_PER_MODEL);
  chosen = chosen.concat(sample(normal, Math.max(8, MAX_PER_MODEL - chosen.length)));
  const toks = [];
  for (const t of chosen) {
    if (seen.has(t.content) || t.content.includes('=====CASE') ) continue;
    seen.add(t.content);
    toks.push(t.content);
  }
  perModel.push([m, toks]);
}
// Glue patterns: tokens at start/end, glued to words, spaced, consecutive,
// after newlines, between whitespace runs (lstrip/rstrip), inside words.
const glue = [
  (a, b, c) => `${a}Hello world${b}`,
  (a, b, c) => `Hello ${a} world ${b} again ${c}`,
  (a, b, c) => `x${a}y${b}${c}z`,
  (a, b, c) => `line one\n${a}\nline two\n\n${b}  ${c}\tend`,
  (a, b, c) => `  ${a}  spaced   ${b}   out  ${c}  `,
  (a, b, c) => `中文${a}日本語${b}😀${c}123`,
  (a, b, c) => `${a}${b}${c}`,
  (a, b, c) => `the ${a}word${b}s, it's ${c}.`,
];
const special = [];
for (const [m, toks] of perModel) {
  for (let i = 0, k = 0; i < toks.length; i += 3, k++) {
    const [a, b = toks[0], c = toks[toks.length - 1]] = toks.slice(i, i + 3);
    special.push([`${m}-${k}`, glue[k % glue.length](a, b, c)]);
  }
}
// Chat-template shaped inputs (what the frontend actually tokenizes).
special.push(
  ['chat-chatml', '<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n4<|im_end|>\n'],
  ['chat-llama3', '<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nYou are a helpful assistant.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nWhat is 2+2?<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n'],
  ['chat-llama2', '<s>[INST] <<SYS>>\nYou are a helpful assistant.\n<</SYS>>\n\nWhat is 2+2? [/INST] 4 </s><s>[INST] And 3+3? [/INST]'],
  ['chat-phi3', '<|system|>\nYou are helpful.<|end|>\n<|user|>\nWhat is 2+2?<|end|>\n<|assistant|>\n4<|end|><|endoftext|>'],
  ['chat-whisper', '<|startoftranscript|><|en|><|transcribe|><|notimestamps|> Hello there.<|endoftext|><|0.00|> Timed<|1.50|>'],
  ['chat-bert', '[CLS] what is the capital of france? [SEP] paris is the capital. [SEP][PAD][PAD]'],
  ['chat-t5', 'translate English to German: The <extra_id_0> walks in <extra_id_1> park.</s>'],
  ['chat-zephyr', '<|system|>\nYou are a friendly chatbot.</s>\n<|user|>\nHi!</s>\n<|assistant|>\n'],
);
{
  let out = '';
  for (const [name, text] of special) {
    if (/\s/.test(name)) throw new Error('bad case name ' + name);
    out += `=====CASE ${name}=====\n${text}\n`;
  }
  fs.writeFileSync(path.join(corpusDir, 'special_tokens.txt'), out);
  console.log(`special_tokens.txt: ${special.length} cases, ${Buffer.byteLength(out)} bytes`);
}

// ------------------------------------------------------------- cases.json
const cases = [];
for (const f of corpusFiles()) {
  const base = f.replace(/\.txt$/, '');
  for (const c of parseCorpus(fs.readFileSync(path.join(corpusDir, f), 'utf8'))) {
    cases.push({ name: `${base}/${c.name}`, text: c.text });
  }
}
{
  const names = new Set();
  for (const c of cases) {
    if (names.has(c.name)) throw new Error('duplicate case ' + c.name);
    names.add(c.name);
  }
}
const casesJSON = JSON.stringify({ format: 1, tokenizers_version: version, cases });
const casesSHA = crypto.createHash('sha256').update(casesJSON).digest('hex');
fs.mkdirSync(goldenDir, { recursive: true });
fs.writeFileSync(path.join(goldenDir, 'cases.json'), casesJSON + '\n');
console.log(`cases.json: ${cases.length} cases, ${Buffer.byteLength(casesJSON)} bytes, sha256 ${casesSHA.slice(0, 12)}`);

// ---------------------------------------------------------- <model>.json
const sameIds = (a, b) => a.length === b.length && a.every((v, i) => v === b[i]);
for (const m of models) {
  if (only && !only.split(',').includes(m)) continue;
  const t0 = Date.now();
  const tok = Tokenizer.fromFile(path.join(modelsRoot, m, 'tokenizer.json'));
  const out = [];
  let ntok = 0;
  for (const c of cases) {
    const g = { name: c.name };
    try {
      const ids = Array.from((await tok.encode(c.text, null, { addSpecialTokens: false })).getIds());
      const idsSp = Array.from((await tok.encode(c.text, null, { addSpecialTokens: true })).getIds());
      g.ids = ids;
      // ids_special is stored in full only when it differs from ids; otherwise
      // the Go side treats a missing ids_special as equal to ids.
      if (!sameIds(ids, idsSp)) g.ids_special = idsSp;
      const dec = await tok.decode(idsSp, false);
      const decSkip = await tok.decode(idsSp, true);
      // decode / decode_skip are omitted when equal to the input text.
      if (dec !== c.text) g.decode = dec;
      if (decSkip !== c.text) g.decode_skip = decSkip;
      ntok += ids.length;
    } catch (e) {
      g.error = String(e && e.message ? e.message : e);
    }
    out.push(g);
  }
  const body = JSON.stringify({ model: m, tokenizers_version: version, cases_sha256: casesSHA, cases: out });
  fs.writeFileSync(path.join(goldenDir, `${m}.json`), body + '\n');
  console.log(`${m}.json: ${ntok} tokens, ${Buffer.byteLength(body)} bytes, ${Date.now() - t0} ms`);
}
