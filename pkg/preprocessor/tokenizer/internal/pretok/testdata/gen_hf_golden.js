// Generates hf_golden.json for the normalize and pretok packages from the
// Rust tokenizers library (npm "tokenizers", N-API binding).
//
//   mkdir -p /tmp/hf && cd /tmp/hf && npm install tokenizers
//   NODE_PATH=/tmp/hf/node_modules node gen_hf_golden.js <models dir> <normalize testdata dir> <pretok testdata dir>
//
// Configs taken from a model are stored by model name only (the test reads
// them from the shared model directory); the corpus is deterministic.
const fs = require('fs');
const path = require('path');
const { Tokenizer } = require('tokenizers');

const [modelsDir, normOut, preOut] = process.argv.slice(2);

function mk(norm, pre) {
  return Tokenizer.fromString(JSON.stringify({
    version: '1.0', truncation: null, padding: null, added_tokens: [],
    normalizer: norm, pre_tokenizer: pre, post_processor: null, decoder: null,
    model: { type: 'WordLevel', vocab: { a: 0 }, unk_token: 'a' },
  }));
}

const fixed = [
  '', ' ', 'Hello world', 'Hello  world', '  leading and trailing  ', 'a   b', 'x \t\ty',
  "I'm you're he'll they've she'd it's don't", "I'M YOU'RE He'Ll THEY'VE", "'s 'x '' '''s q'",
  "it\u2019s rock'n'roll 'ſ 'ſt", 'line1\nline2\r\nline3\r\r\n\n  \n x', 'tab\tsep\t\tend\t',
  ' \n', '\n\n\nword', 'word   \n\n   ', '12345678901 3.14159 1,000,000 007', 'x1y22z333w4444',
  '\u0663\u0664\u0665 \u00b2\u00b3 \u2167 \u0967\u0968', '你好，世界！这是一个测试。', '日本語のテキスト、カタカナー',
  '한국어 텍스트입니다', '\u{1F600}\u{1F44D}\u{1F3FD} \u{1F468}\u200D\u{1F469}\u200D\u{1F467} \u{1F1EF}\u{1F1F5}',
  'e\u0301 a\u0301\u0302 o\u0308\u0304x Ç é Å ﬁ ①', 'Ａｂｃ１２３　全角', 'ß İstanbul ΣΑΣ ǅ ǈ ﬃ',
  'مرحبا بالعالم 123', 'नमस्ते दुनिया', 'a\u0000b\u0001c\u007fd\u0085e\u00a0f\u200bg\ufeffh\ufffdi',
  'café naïve résumé coöperate', '<|endoftext|>hello<|startoftext|> <|endoftext|>', 'a<!dummy-prefix!>b c',
  '\u2581already\u2581spaced \u2581', 'end with space ', '!!!???...,,,', ' !x ?y  .z', '$100 + 5% = <tag> #hash @user',
  'snake_case camelCase kebab-case', '\u3000ideographic\u3000space', 'mixed\u2028line\u2029para',
  '(hello) [world] {x}', 'Numbers: ①②③ ½ ¼', 'a\r\nb', '\r\n', '  \r\n  x', 'x  \n\t y', 'wordſ', 'Ⅻ ⅻ', '\u{10400}\u{10428}',
  '\u{20000}\u{2B820}\u{2B920}\u4e00', '\ud7a3\u1100\u1161\u11a8', 'a\u0903b \u0915\u093f', 'under_score __init__',
  '   ', '\t', 'ab\u200dcd\u200c', 'ǉ ǋ', 'x\u0345y', '\u00ad soft\u00adhyphen', '\u0600\u0601 \u061c',
];
// Deterministic random strings over a mixed pool.
const pool = Array.from("aAbBzZ09 5  \t\n\r'sStTrRlLdDveV.,;!?-_()<>|\"éÉüßİſ你好日本カナー한국\u0301\u0308\u0903١٢٣²Ⅷ\u00a0\u3000\u200b\u2581\u{1F600}\u{1F44D}\u{1F3FD}\u200d€$+=~@#%^&*{}[]/\\");
let seed = 12345;
// 32-bit LCG (Math.imul: a plain float product loses the low bits).
function rnd(n) { seed = (Math.imul(seed, 1103515245) + 12345) >>> 0; return (seed >>> 8) % n; }
const corpus = fixed.slice();
for (let i = 0; i < 400; i++) {
  let len = 1 + rnd(24), s = '';
  for (let j = 0; j < len; j++) s += pool[rnd(pool.length)];
  corpus.push(s);
}

function model(name) {
  const d = JSON.parse(fs.readFileSync(path.join(modelsDir, name, 'tokenizer.json'), 'utf8'));
  return d;
}
const models = fs.readdirSync(modelsDir).filter((m) => fs.existsSync(path.join(modelsDir, m, 'tokenizer.json'))).sort();

const B = (b) => ({ type: 'Split', pattern: { String: ' ' }, behavior: b, invert: false });
const normCfgs = [
  ['NFC', { type: 'NFC' }], ['NFD', { type: 'NFD' }], ['NFKC', { type: 'NFKC' }], ['NFKD', { type: 'NFKD' }],
  ['Lowercase', { type: 'Lowercase' }], ['Strip', { type: 'Strip', strip_left: true, strip_right: true }],
  ['StripLeft', { type: 'Strip', strip_left: true, strip_right: false }], ['StripAccents', { type: 'StripAccents' }],
  ['Nmt', { type: 'Nmt' }], ['ByteLevel', { type: 'ByteLevel' }],
  ['ReplaceString', { type: 'Replace', pattern: { String: '  ' }, content: '_' }],
  ['ReplaceSpaceRegex', { type: 'Replace', pattern: { Regex: '\\s+' }, content: ' ' }],
  ['ReplaceRegex2', { type: 'Replace', pattern: { Regex: '[0-9]+|ab' }, content: '#' }],
  ['Prepend', { type: 'Prepend', prepend: '\u2581' }],
  ['BertDefault', { type: 'BertNormalizer', clean_text: true, handle_chinese_chars: true, strip_accents: null, lowercase: true }],
  ['BertCased', { type: 'BertNormalizer', clean_text: true, handle_chinese_chars: true, strip_accents: null, lowercase: false }],
  ['BertStripOnly', { type: 'BertNormalizer', clean_text: false, handle_chinese_chars: false, strip_accents: true, lowercase: false }],
  ['SeqNFDStrip', { type: 'Sequence', normalizers: [{ type: 'NFD' }, { type: 'StripAccents' }, { type: 'Lowercase' }] }],
];
const preCfgs = [
  ['ByteLevelDefault', { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true }],
  ['ByteLevelNoRegex', { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: false }],
  ['SplitGPT2', { type: 'Split', pattern: { Regex: "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+" }, behavior: 'Isolated', invert: false }],
  ['SplitRegex2', { type: 'Split', pattern: { Regex: '[0-9]+|\\s' }, behavior: 'Isolated', invert: false }],
  ['SplitRegex2Invert', { type: 'Split', pattern: { Regex: '[a-z]+' }, behavior: 'Removed', invert: true }],
  ['SplitRemoved', B('Removed')], ['SplitIsolated', B('Isolated')], ['SplitPrev', B('MergedWithPrevious')],
  ['SplitNext', B('MergedWithNext')], ['SplitContiguous', B('Contiguous')],
  ['SplitNextInvert', { type: 'Split', pattern: { String: ' ' }, behavior: 'MergedWithNext', invert: true }],
  ['SplitPrevInvert', { type: 'Split', pattern: { String: ' ' }, behavior: 'MergedWithPrevious', invert: true }],
  ['MetaAlways', { type: 'Metaspace', replacement: '\u2581', prepend_scheme: 'always', split: true }],
  ['MetaFirst', { type: 'Metaspace', replacement: '\u2581', prepend_scheme: 'first', split: true }],
  ['MetaNever', { type: 'Metaspace', replacement: '\u2581', prepend_scheme: 'never', split: true }],
  ['MetaNoSplit', { type: 'Metaspace', replacement: '\u2581', prepend_scheme: 'always', split: false }],
  ['MetaLegacy', { type: 'Metaspace', replacement: '_', add_prefix_space: true }],
  ['Whitespace', { type: 'Whitespace' }], ['WhitespaceSplit', { type: 'WhitespaceSplit' }],
  ['Bert', { type: 'BertPreTokenizer' }],
  ['PunctIsolated', { type: 'Punctuation', behavior: 'Isolated' }], ['PunctContiguous', { type: 'Punctuation', behavior: 'Contiguous' }],
  ['PunctPrev', { type: 'Punctuation', behavior: 'MergedWithPrevious' }], ['PunctNext', { type: 'Punctuation', behavior: 'MergedWithNext' }],
  ['PunctRemoved', { type: 'Punctuation', behavior: 'Removed' }],
  ['Digits', { type: 'Digits', individual_digits: false }], ['DigitsIndividual', { type: 'Digits', individual_digits: true }],
  ['CharDelimiter', { type: 'CharDelimiterSplit', delimiter: '-' }], ['UnicodeScripts', { type: 'UnicodeScripts' }],
  ['FixedLength', { type: 'FixedLength', length: 3 }],
  ['SeqWSMetaFirst', { type: 'Sequence', pretokenizers: [{ type: 'WhitespaceSplit' }, { type: 'Metaspace', replacement: '\u2581', prepend_scheme: 'first', split: true }] }],
];

const normOutJ = { corpus, cases: [] };
const preOutJ = { corpus, cases: [] };
function addNorm(name, cfg, ref) {
  const n = mk(cfg, null).getNormalizer();
  normOutJ.cases.push({ name, ...(ref ? { model: ref } : { config: cfg }), out: corpus.map((s) => n.normalizeString(s)) });
}
function addPre(name, cfg, ref) {
  const p = mk(null, cfg).getPreTokenizer();
  preOutJ.cases.push({ name, ...(ref ? { model: ref } : { config: cfg }), out: corpus.map((s) => p.preTokenizeString(s).map((x) => x[0])) });
}
for (const [n, c] of normCfgs) addNorm(n, c);
for (const [n, c] of preCfgs) addPre(n, c);
for (const m of models) {
  const d = model(m);
  if (d.normalizer) addNorm('model:' + m, d.normalizer, m);
  if (d.pre_tokenizer) addPre('model:' + m, d.pre_tokenizer, m);
}
fs.writeFileSync(path.join(normOut, 'hf_golden.json'), JSON.stringify(normOutJ));
fs.writeFileSync(path.join(preOut, 'hf_golden.json'), JSON.stringify(preOutJ));
console.log('corpus', corpus.length, 'normalizers', normOutJ.cases.length, 'pre_tokenizers', preOutJ.cases.length);
