// Generates hf_golden_cat.json: HF (npm "tokenizers", Oniguruma) splits for
// the o200k and DeepSeek-V3 patterns, over edge cases and deterministic
// random strings drawn from small alphabets of upper/lower/title/modifier/
// other letters, marks, digits, punctuation, symbols, apostrophes and
// white space.
//
//   NODE_PATH=/tmp/hf/node_modules node testdata/gen_hf_golden_cat.js testdata/hf_golden_cat.json [random count]
//
// A larger count (e.g. 50000) written elsewhere can be checked with
// HF_CAT_GOLDEN=<file> go test -run TestHFGoldenCat .
const fs = require('fs');
const { Tokenizer } = require('tokenizers');

const [out, countArg] = process.argv.slice(2);
const count = countArg ? parseInt(countArg, 10) : 600;

function mk(pre) {
  return Tokenizer.fromString(JSON.stringify({
    version: '1.0', truncation: null, padding: null, added_tokens: [],
    normalizer: null, pre_tokenizer: pre, post_processor: null, decoder: null,
    model: { type: 'WordLevel', vocab: { a: 0 }, unk_token: 'a' },
  }));
}

const O200K = "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const DS_N = '\\p{N}{1,3}';
const DS_CJK = '[一-龥぀-ゟ゠-ヿ]+';
const DS = "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\\r\\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const split = (re) => ({ type: 'Split', pattern: { Regex: re }, behavior: 'Isolated', invert: false });

const fixed = [
  '', ' ', 'Hello world', 'HELLOworld', 'HELLO world', 'helloWORLD', 'HelloWorld', "I'm YOU'RE He'Ll they've SHE'D it's",
  "DON'T don't 'S 's x's X'S X'Sx", "'s 'x '' '''s q'", "wordſ 'ſ x'ſ X'ſt", 'line1\nline2\r\nline3\r\r\n\n  \n x',
  'a/b//c\n/d', '  /  \n/', 'path/to/file.txt\n', '12345678901 3.14159 1,000,000 007', '٣٤٥ ²³ Ⅷ १२',
  '你好，世界！这是一个测试。', '日本語のテキスト、カタカナー', 'ｶﾀｶﾅ ﾞﾟ', '한국어 텍스트입니다',
  '\u{1F600}\u{1F44D}\u{1F3FD} \u{1F468}\u200D\u{1F469}\u200D\u{1F467}', 'e\u0301 a\u0301\u0302 E\u0301X \u0301A \u0301a',
  'ǅungla ǅUNGLA ǈj Ǉ ǈ', 'ʰʱ xʰ Xʰ ʰX', 'ß İstanbul ΣΑΣ σας ﬁ ﬃ', 'مرحبا بالعالم', 'नमस्ते दुनिया',
  'a\u0000b\u0001c\u007fd\u0085e\u00a0f\u200bg\ufeffh\ufffdi', '$100 + 5% = <tag> #hash @user', '#abc #ABCé .Net .net\n',
  "'hello' \"quote\" (paren) [br] {x} `code` ~tilde ^caret |pipe _under", '©®™ €£¥ ±×÷ ←→ ∀∃ ♠♣', '「引用」。、', ' !x ?y  .z\n\n',
  '\u3000x\u3000 \u00a0y', '   ', '\t', '\r\n', ' \r\n x', 'x  \n\t y', 'end \n ', 'snake_case camelCase kebab-case',
  '\u{10D50}\u{10D70} \u{1E5D0}\u{1E5EE} \u{16D40}\u{16D43}', '\u1C89\u1C8A \uA7CB\uA7CD \u0897x', '\u{1CC00}\u2427 \u1B4E\u1B7F x\u{10D6E}',
  '\u{10D40}\u{10D41}\u{10D42}\u{10D43} x\u{116D0}',
];
const pools = [
  Array.from("AZÉΣaz éσǅǈʰーあ你ا\u0301\u0903\u20DD19٣ⅧsStTrReElLdDmMvV''' \t\r\n//.!$€、\u00a0ſ"),
  Array.from("aAzZé你あカー#$+^`~-_'\"()[]{}\\/.,;:!?@€©「。，\u0301\u093f19٣\u0000\u200b \u3000\t\r\n\u{1F600}ſ"),
];
let seed = 4242;
// 32-bit LCG (Math.imul: a plain float product loses the low bits).
function rnd(n) { seed = (Math.imul(seed, 1103515245) + 12345) >>> 0; return (seed >>> 8) % n; }
const corpus = fixed.slice();
for (let i = 0; i < count; i++) {
  const pool = pools[i % pools.length];
  const len = 1 + rnd(16);
  let s = '';
  for (let j = 0; j < len; j++) s += pool[rnd(pool.length)];
  corpus.push(s);
}
const cfgs = [
  ['O200k', split(O200K)],
  ['DeepSeekV3Split', split(DS)],
  ['DeepSeekCJK', split(DS_CJK)],
  ['Digits3', split(DS_N)],
  ['DeepSeekV3', { type: 'Sequence', pretokenizers: [split(DS_N), split(DS_CJK), split(DS),
    { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false }] }],
];
const res = { corpus, cases: [] };
for (const [name, cfg] of cfgs) {
  const p = mk(cfg).getPreTokenizer();
  res.cases.push({ name, config: cfg, out: corpus.map((s) => p.preTokenizeString(s).map((x) => x[0])) });
}
fs.writeFileSync(out, JSON.stringify(res));
console.log('corpus', corpus.length, 'cases', res.cases.length);
