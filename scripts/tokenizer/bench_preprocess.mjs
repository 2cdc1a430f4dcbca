// bench_preprocess.mjs is the baseline for BenchmarkPrepareChat220KB
// (pkg/preprocessor/bench_test.go): the same ~220 KB Qwen3 conversation,
// rendered with @huggingface/jinja and tokenized with HF `tokenizers`
// (npm, Rust core, 1 thread), without special tokens added.
//
// The conversation is built with the same rule as bigChat in the Go
// benchmark: alternating user/assistant turns of 2000 + (i*37 % 3000)
// code points cut from prose.txt + code.txt + synthetic.txt.
//
// Usage: node bench_preprocess.mjs [--runs 50] [--models-dir DIR]
import fs from 'node:fs';
import path from 'node:path';
import { Template } from '@huggingface/jinja';
import { loadTokenizers, corpusDir, defaultModelsRoot, argValue } from './lib.mjs';

if (!process.env.RAYON_NUM_THREADS) process.env.RAYON_NUM_THREADS = '1';
const { Tokenizer, version } = loadTokenizers();
const runs = Number(argValue('--runs', '50'));
const dir = path.join(path.resolve(argValue('--models-dir', defaultModelsRoot)), 'qwen3');

const text = Array.from(['prose.txt', 'code.txt', 'synthetic.txt']
  .map((f) => fs.readFileSync(path.join(corpusDir, f), 'utf8')).join(''));
const messages = [];
let total = 0;
let pos = 0;
while (total < 220 * 1024) {
  const n = 2000 + (messages.length * 37) % 3000;
  if (pos + n > text.length) pos = 0;
  const s = text.slice(pos, pos + n).join('');
  pos += n;
  messages.push({ role: messages.length % 2 === 1 ? 'assistant' : 'user', content: s });
  total += Buffer.byteLength(s, 'utf8');
}

const cfg = JSON.parse(fs.readFileSync(path.join(dir, 'tokenizer_config.json'), 'utf8'));
const src = fs.existsSync(path.join(dir, 'chat_template.jinja'))
  ? fs.readFileSync(path.join(dir, 'chat_template.jinja'), 'utf8') : cfg.chat_template;
const tok = await Tokenizer.fromFile(path.join(dir, 'tokenizer.json'));

const tmpl = new Template(src); // compiled once, as the Go side caches it per model
const ctx = { messages, add_generation_prompt: true, bos_token: cfg.bos_token ?? '', eos_token: cfg.eos_token };

const renderMs = [];
const totalMs = [];
let ids = 0;
let bytes = 0;
for (let i = 0; i < runs; i++) {
  const t0 = process.hrtime.bigint();
  const prompt = tmpl.render(ctx);
  const t1 = process.hrtime.bigint();
  const enc = await tok.encode(prompt, null, { addSpecialTokens: false });
  const t2 = process.hrtime.bigint();
  renderMs.push(Number(t1 - t0) / 1e6);
  totalMs.push(Number(t2 - t0) / 1e6);
  ids = enc.getIds().length;
  bytes = Buffer.byteLength(prompt, 'utf8');
}
const pct = (a, p) => [...a].sort((x, y) => x - y)[Math.floor(a.length * p)];
console.log(`@huggingface/jinja + tokenizers ${version} (RAYON_NUM_THREADS=${process.env.RAYON_NUM_THREADS}), ${runs} runs`);
console.log(`prompt: ${bytes} bytes, ${ids} tokens, ${messages.length} messages`);
console.log(`render      p50 ${pct(renderMs, 0.5).toFixed(2)} ms  p99 ${pct(renderMs, 0.99).toFixed(2)} ms`);
console.log(`render+tok  p50 ${pct(totalMs, 0.5).toFixed(2)} ms  p99 ${pct(totalMs, 0.99).toFixed(2)} ms`);
