// gencorpus.mjs writes the generated parts of the tokenizer parity corpus:
//
//   testdata/corpus/edge.txt       hand-picked edge cases written with JS escapes
//                                  (control characters, CR/CRLF, rare Unicode)
//   testdata/corpus/synthetic.txt  seeded pseudo-random text (deterministic)
//   testdata/corpus/unicode_versions.txt  characters whose properties differ
//                                  between Unicode versions
//
// The hand-written parts (prose.txt, code.txt) are edited directly and
// special_tokens.txt is written by goldens.mjs. Output is deterministic:
// running this twice gives byte-identical files.
//
// Corpus file format (shared with goldens.mjs): a line "=====CASE <name>====="
// starts a case; the case text is everything after that line up to (not
// including) the "\n" that precedes the next marker line or the end of file.
//
// Usage: node gencorpus.mjs [--out <corpus dir>]
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, '..', '..');
let outDir = path.join(repo, 'pkg/preprocessor/tokenizer/testdata/corpus');
const ai = process.argv.indexOf('--out');
if (ai >= 0) outDir = path.resolve(process.argv[ai + 1]);

const rep = (s, n) => s.repeat(n);

// ---------------------------------------------------------------- edge.txt
const edge = [
  ['empty', ''],
  ['single-space', ' '],
  ['single-letter', 'a'],
  ['single-newline', '\n'],
  ['hello-world', 'Hello world'],
  ['leading-space-hello', ' Hello'],
  ['double-leading-space', '  Hello  world  '],
  ['whitespace-only-mix', ' \t \n \r\n \u00a0 \u3000 '],
  ['spaces-between', 'a b  c   d    e     f      g       h        i'],
  ['spaces-before-digits-punct', 'x   1   .   ,   !   中   👍   \t   é'],
  ['trailing-spaces', 'end of line   \nnext line\t\t\nlast    '],
  ['tabs', 'col1\tcol2\t\tcol3\t\t\tcol4\n\tindented\n\t\tdouble\n \t \tmixed\t'],
  ['newline-runs', 'a\nb\n\nc\n\n\nd\n\n\n\ne\n\n\n\n\n\n\n\n\n\nf'],
  ['cr-only', 'line one\rline two\rline three\r\rline five\r'],
  ['crlf', 'line one\r\nline two\r\n\r\nline four\r\n  indented\r\n\tTabbed\r\n'],
  ['mixed-eol', 'unix\nwindows\r\nmac\rmixed\n\r\n\r\rend'],
  ['unicode-spaces', 'nbsp\u00a0here, thin\u2009space, em\u2003space, ideographic\u3000space, narrow\u202fnbsp, figure\u2007space, hair\u200aspace, ogham\u1680space, mongolian\u180evs'],
  ['zero-width', 'zero\u200bwidth\u200bspace, zw\u200cnj, zw\u200dj, word\u2060joiner, soft\u00adhyphen, \ufeffBOM inside, \u2028line sep\u2029para sep, next\u0085line, vt\u000bff\u000cend'],
  ['bom-start', '\ufeffStarts with a BOM'],
  ['control-chars', 'nul\u0000char bell\u0007 esc\u001b[31mred\u001b[0m del\u007f c1\u0080\u0090\u009f unit\u001fsep\u0001\u0002\u0003'],
  ['digits-short', '0 1 12 123 1234 12345 123456 1234567 12345678 123456789 1234567890'],
  ['digits-long', rep('1234567890', 20) + ' ' + rep('0', 101) + ' ' + rep('9', 37)],
  ['numbers-formats', '3.14159265358979 -42 +7 1,234,567.89 1.234.567,89 1e10 6.022e23 -1.5E-9 0x1F 0b1010 0o755 1_000_000 50% $19.99 €5 ¥100 £3.50 ₹1,00,000 12:30:45 2024-06-01 06/01/2024 v1.2.3-rc.1+build.5 +1-800-555-0199 (555) 123-4567 192.168.1.1 3/4 1/3 98.6°F -40°C 10^9 2^64=18446744073709551616'],
  ['digits-mixed-scripts', 'fullwidth １２３４５ arabic-indic ٠١٢٣٤٥٦٧٨٩ persian ۰۱۲۳ devanagari ०१२३४५ bengali ০১২৩ thai ๐๑๒๓ tamil ௧௨௩ superscript ¹²³⁴ subscript ₁₂₃ circled ①②③ roman ⅠⅡⅢⅣ fractions ½⅓¼ math 𝟎𝟏𝟐𝟑𝟒 𝟘𝟙𝟚'],
  ['alnum-mix', 'a1b2c3 abc123def 123abc abc123 H2O CO2 4x4 x86_64 arm64 iPhone15 COVID-19 B2B mp3 utf-8 base64 sha256 1st 2nd 3rd 4th 100k 5G 3D'],
  ['long-words', 'pneumonoultramicroscopicsilicovolcanoconiosis Supercalifragilisticexpialidocious antidisestablishmentarianism Rindfleischetikettierungsüberwachungsaufgabenübertragungsgesetz ' + 'Llanfairpwllgwyngyllgogerychwyrndrobwllllantysiliogogogoch'],
  ['word-over-100-chars', rep('abcdefghij', 11) + ' ' + rep('xyz', 40) + 'end ' + rep('Ab', 60)],
  ['very-long-word', Array.from({ length: 600 }, (_, i) => 'qwrtypsdfghjklzxcvbnm'[(i * 7 + (i >> 3)) % 21] + (i % 5 === 0 ? 'aeiou'[i % 5 === 0 ? (i / 5) % 5 : 0] : '')).join('')],
  ['repeat-a', 'a aa aaa aaaa aaaaa ' + rep('a', 10) + ' ' + rep('a', 33) + ' ' + rep('a', 100) + ' ' + rep('a', 1000)],
  ['repeat-punct', rep('.', 50) + ' ' + rep('=', 80) + ' ' + rep('-', 120) + ' ' + rep('*', 17) + ' ' + rep('!?', 40) + ' ' + rep('_', 64) + ' ' + rep('#', 9) + ' ' + rep('/', 33) + ' ' + rep('…', 10)],
  ['repeat-space-then-word', rep(' ', 100) + 'x' + rep(' ', 31) + 'y' + rep('\t', 20) + 'z' + rep(' ', 7)],
  ['repeat-newlines', 'top' + rep('\n', 30) + 'bottom' + rep('\r\n', 12) + 'end'],
  ['repeat-multichar', rep('ab', 200) + ' ' + rep('abc ', 50) + rep('la', 77)],
  ['repeat-nonlatin', rep('中', 50) + ' ' + rep('ـ', 30) + ' ' + rep('あ', 40) + ' ' + rep('ж', 45) + ' ' + rep('한', 25) + ' ' + rep('ि', 12) + ' ' + rep('🙂', 20)],
  // Long runs of one character have many segmentations of (nearly) equal
  // Unigram score; which one wins depends on the last bits of the scores as
  // Rust reads them (serde_json's float parsing is not correctly rounded).
  // Runs of 61..67 cover every length modulo 2..7. With correctly rounded
  // scores nmt-unigram gets 'b' and 'x' wrong, t5-small '-' and '_'.
  ...[['b', 'b', 199], ['x', 'x', 200], ['dash', '-', 199], ['underscore', '_', 200]].map(([name, c, n]) =>
    [`repeat-run-${name}`, Array.from({ length: 7 }, (_, i) => rep(c, 61 + i)).join(' ') + ' ' + rep(c, n)]),
  ['arabic-tatweel', 'كـــــتـــــاب مـــرحـــبـــا ســـــــــلام ـ ـــ ــــــــــــ'],
  ['emoji-basic', '😀 😃 😄 😁 😆 😅 😂 🤣 🥲 ☺️ 😊 😇 🙂 🙃 😉 🔥 💯 ✨ 🎉 🚀 ❤️ 🧡 💛 💚 💙 💜 🖤 🤍 🤎 ✅ ❌ ⚠️ ☕ ⭐ 🌍 🍕 🐍 🦀 🐹'],
  ['emoji-skin-tones', '👍 👍🏻 👍🏼 👍🏽 👍🏾 👍🏿 👋🏽 🙏🏾 💪🏻 🤝🏿 👩🏽‍💻 👨🏿‍🚀 🧑🏼‍🔬 👮🏻‍♀️ 🏃🏾‍♂️ 🤷🏽‍♀️'],
  ['emoji-zwj', '👨‍👩‍👧‍👦 👩‍👩‍👦 👨‍❤️‍👨 👩‍❤️‍💋‍👨 🏳️‍🌈 🏳️‍⚧️ 🏴‍☠️ 🐕‍🦺 🐈‍⬛ 🧑‍🤝‍🧑 🧑🏾‍🤝‍🧑🏻 ❤️‍🔥 😶‍🌫️ 👁️‍🗨️'],
  ['emoji-flags-keycaps', '🇺🇸 🇯🇵 🇩🇪 🇮🇳 🇧🇷 🇺🇦 🇪🇺 🏴󠁧󠁢󠁳󠁣󠁴󠁿 🏴󠁧󠁢󠁷󠁬󠁳󠁿 1️⃣ 2️⃣ #️⃣ *️⃣ 🔟 ©️ ®️ ™️'],
  ['emoji-in-words', 'hello👋world I❤️NY go🚀fast 100💯 end.🎉 (😀) "🔥" 😀😀😀😀😀 🫠🫡🫶 🪿🪼'],
  ['combining-marks', 'e\u0301 é (precomposed) n\u0303 ñ a\u0300\u0301\u0302\u0303\u0304 o\u0308\u0304 A\u030a Å \u212b Ω \u2126 K \u212a c\u0327 s\u030c z\u0307 i\u0307 q\u0323\u0307 \u0301leading-combining'],
  ['zalgo', 'Z\u0351\u036b\u0343\u036a\u0302\u036b\u033d\u034f\u0334\u0319\u0324\u031e\u0349\u035a\u032f\u031e\u0320\u034dA\u036b\u0357\u0334\u0362\u0335\u031c\u0330\u0354L\u0368\u0367\u0369\u0358\u0320G\u0311\u0357\u030e\u0305\u035b\u0341\u0334\u033b\u0348\u034d\u0354\u0339O\u0342\u030c\u030c\u0358\u0328\u0335\u0339\u033b\u031d\u0333 text'],
  ['hangul-jamo', 'precomposed 한국어 decomposed \u1112\u1161\u11ab\u1100\u116e\u11a8\u110b\u1165 compat ㅎㅏㄴ halfwidth ﾡﾢ'],
  ['compat-forms', 'ligatures ﬁ ﬂ ﬀ ﬃ ﬄ ﬅ ﬆ fullwidth ＡＢＣ ａｂｃ！？ halfwidth ｶﾀｶﾅ squared ㎏ ㎞ ㍿ ㈱ circled ⓐⓑⓒ Ⓐ script ℊ ℋ ℓ double-struck ℝ ℕ ℤ superscripts x² y³ ⁿ vulgar ½ ¾ roman Ⅻ ⅻ angstrom Å ohm Ω micro µ μ kelvin K degree ℃'],
  ['math-alnum-astral', '𝕳𝖊𝖑𝖑𝖔 𝓦𝓸𝓻𝓵𝓭 𝐁𝐨𝐥𝐝 𝘐𝘵𝘢𝘭𝘪𝘤 𝚖𝚘𝚗𝚘 𝔉𝔯𝔞𝔨𝔱𝔲𝔯 𝛑 𝛼𝛽𝛾 𝟙𝟚𝟛'],
  ['astral-cjk-other', 'CJK-B 𠀀𠀁𠀂 𪚥 𠮷野家 CJK-G 𰻞𰻞麵 hieroglyphs 𓀀𓀁𓂀 gothic 𐌰𐌱𐌲 linear-b 𐀀𐀁 cuneiform 𒀀𒀁 music 𝄞𝄢 alchemical 🜁🜂 mahjong 🀄 domino 🁣 playing-card 🂡 old-italic 𐌀𐌁 deseret 𐐀𐐨 osage 𐒰𐓘'],
  ['long-s-and-folding', "U+017F: ſ ſs ſt Meſſe 'ſ it'ſ IT'S it's it'S 'S 'ſt 'ſſ. Kelvin K k K. ß ẞ SS ss. ǅ ǆ Ǆ. İ i̇ ı I. Σίσυφος ΣΊΣΥΦΟΣ. ﬀ ＦＦ. µ Μ μ. Ω ω."],
  ['rtl-marks', 'left\u200eto\u200fright marks, override \u202eevil.exe\u202c done, isolates \u2066LRI\u2069 \u2067RLI\u2069 \u2068FSI\u2069, embedding \u202aLRE\u202c \u202bRLE\u202c. עברית\u200f English \u200eعربي 123 \u061c ALM'],
  ['bidi-mixed', 'The title is מלחמה ושלום in Hebrew and الحرب والسلام in Arabic (2024). رقم 42 و 3.14 في النص. שלום world 123 עולם.'],
  ['variation-selectors', 'text ☺\ufe0e emoji ☺\ufe0f heart ❤ ❤\ufe0f star ⭐\ufe0e digit 1\ufe0f\u20e3 CJK 葛\udb40\udd00 葛\udb40\udd01 tags \udb40\udc41\udb40\udc42'],
  ['pua-noncharacters', 'private use \ue000\ue001\uf8ff astral PUA \udb80\udc00 nonchar \ufdd0\ufdef\ufffe\uffff replacement \ufffd\ufffd specials \ufff9\ufffa\ufffb object \ufffc'],
  ['literal-token-strings', 'Metaspace ▁hello ▁▁world ▁ ▁▁ byte-level Ġhello ĊĠ Ġ ĉ âĢĶ byte tokens <0x41><0x0A> <0xE4><0xBD><0xA0> wordpiece ##ing ##s un##able bpe-suffix low</w> er</w> sentencepiece ▁The ▁quick'],
  ['fake-special-tokens', '<s> </s> <unk> <pad> <mask> [CLS] [SEP] [UNK] [PAD] [MASK] <|endoftext|> <|im_start|> <|im_end|> <|begin_of_text|> < s > <|im_start <|im_start| |im_start|> <<|im_end|>> [[CLS]] <s><s></s></s> <S> <|IM_START|> <|endoftext|x>'],
  ['clean-up-spaces', "Hello , world . How are you ? I ' m fine ! It ' s ok . don ' t n't 's 've 're 'm a - b a / b ( x ) [ y ] \" z \""],
  ['casing', 'HELLO hello Hello hElLo HeLLo WORLD World wORLD ALLCAPS SENTENCE WITH NUMBERS 123 AND SYMBOLS !@# camelCaseIdentifier PascalCaseIdentifier snake_case_identifier SCREAMING_SNAKE_CASE kebab-case-identifier'],
  ['apostrophes-lookahead', "'s 'S 't 'T 're 'RE 've 'VE 'm 'M 'll 'LL 'Ll 'lL 'd 'D 'x ' s '' ''s ' 'hello' a's b'ss c's' it's'  it's  it's\nit's\t's's's 'sss"],
  ['punct-space-combos', 'a . b , c ; d : e ! f ? g\n. , ; : ! ?\n.a ,b ;c :d !e ?f\n(a) [b] {c} <d>\n"a" \'b\' `c`\n... ,,, ;;; ::: !!! ???\n.\t,\t;\n a. b, c; d: e! f? g.  '],
  ['url-and-paths-long', 'https://example.com/' + rep('very-long-path-segment/', 10) + '?q=' + rep('x', 50) + '&lang=en#frag ' + '/home/user/' + rep('deeply/nested/', 8) + 'file.txt'],
  ['base64-hex-blob', 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg== ' + '0123456789abcdef'.repeat(16) + ' 5f4dcc3b5aa765d61d8327deb882cf99'],
  ['nfc-sensitive', 'café café Å Å ḱ ḱ ṩ ṩ ệ ệ ǘ ǘ Ä Ä ö ö ﬁ fi 가 가 각 각 \u0928\u093c \u0929 \u09a1\u09bc \u09dc'],
  ['indic-conjuncts', 'क्ष त्र ज्ञ श्र द्ध द्व ह्म क्\u200dष क्\u200cष ர்க ஸ்ரீ க்ஷ ன் ண் ள் ழ் நீ தொ கௌ ಕ್ಷ ক্ষ জ্ঞ ত্\u200d'],
  ['cjk-punct-and-fullwidth', '你好，世界！这是一个测试。「引用」『引用』【括号】（括号）《书名》〈单〉……——、；：？！〜・　全角スペース　ＡＢＣ１２３'],
  ['chinese-no-spaces-long', '中华人民共和国成立于一九四九年十月一日首都北京是全国的政治文化中心也是世界著名的古都之一拥有三千多年建城史和八百多年建都史长城故宫天坛颐和园等名胜古迹吸引着来自世界各地的游客每年国庆节期间天安门广场都会举行隆重的庆祝活动'],
  ['japanese-mixed', '私はGoとPythonでプログラムを書きます。version 1.26をinstallしました！ﾃｽﾄ１２３ＡＢＣ。'],
];

// ----------------------------------------------------------- synthetic.txt
// mulberry32: tiny deterministic PRNG.
function mulberry32(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const rnd = mulberry32(0x5eed1234);
const pick = (arr) => arr[Math.floor(rnd() * arr.length)];
const int = (n) => Math.floor(rnd() * n);

const syl = {
  latin: ['ka', 'to', 'ri', 'men', 'sel', 'vor', 'qu', 'ex', 'tra', 'ion', 'ing', 'ble', 'str', 'ph', 'ough', 'the', 'zz', 'ae', 'ij', 'y'],
  accented: ['é', 'ü', 'ñ', 'ø', 'å', 'ç', 'ł', 'ş', 'ğ', 'ő', 'ž', 'ė', 'ą', 'ţ'],
  cyrillic: ['ка', 'то', 'ри', 'мен', 'сел', 'вор', 'щ', 'ый', 'ять', 'ство', 'жи', 'ёж'],
  greek: ['κα', 'το', 'ρι', 'μεν', 'σελ', 'ος', 'ψυ', 'ξη', 'ώ', 'ή'],
  arabic: ['كا', 'تو', 'ري', 'من', 'سل', 'ور', 'ال', 'ة', 'ين', 'ون'],
  devanagari: ['का', 'तो', 'रि', 'मेन', 'सेल', 'वोर', 'क्ष', 'ज्ञ', 'ं', 'ः'],
  tamil: ['கா', 'தோ', 'ரி', 'மென்', 'செல்', 'வோர்', 'ழ', 'ஸ்ரீ'],
  hangul: ['가', '나', '다', '라', '마', '바', '사', '아', '한', '국', '어', '글'],
};
const cjkCommon = '的一是不了人我在有他这中大来上国个到说们为子和你地出道也时年得就那要下以生会自着去之过家学对可她里后小么心多天而能好都然没日于起还发成事只作当想看文无开手十用主行方又如前所本见经头面公同三已老从动两长知民样现分将外但身些与高意进把法此实回二理美点月明其种声全工己话儿者向情部正名定女问力机给等几很业最间新什打便位因重被走电四第门相次东政海口使教西再平真听世气信北少关并内加化由却代军产入先山五太水万市眼体别处总才场师书比住员九笑性通目华报立马命张活难神数件安表原车白应路期叫死常提感金何更反合放做系计或司利受光王果亲界及今京务制解各任至清物台象记边共风战干接它许八特觉望直服毛林题建南度统色字请交爱让认算论百吃义科怎元社术结六功指思非流每青管夫连远资队跟带花快条院变联言权往展该领传近留红治决周保达办运武半候七必城父强步完革深区即求品士转量空甚众技轻程告江语英基派满式李息写呢识极令黄德收脸钱党倒未持音众';
const hira = 'あいうえおかきくけこさしすせそたちつてとなにぬねのはひふへほまみむめもやゆよらりるれろわをんがぎぐげござじずぜぞだぢづでどばびぶべぼぱぴぷぺぽゃゅょっー';
const kata = 'アイウエオカキクケコサシスセソタチツテトナニヌネノハヒフヘホマミムメモヤユヨラリルレロワヲンガギグゲゴザジズゼゾダヂヅデドバビブベボパピプペポャュョッー';

function word(script) {
  const parts = syl[script];
  let w = '';
  const n = 1 + int(4);
  for (let i = 0; i < n; i++) w += pick(parts);
  if (script === 'latin' && rnd() < 0.15) w += pick(syl.accented);
  if (script === 'latin' && rnd() < 0.2) w = w[0].toUpperCase() + w.slice(1);
  if (script === 'latin' && rnd() < 0.03) w = w.toUpperCase();
  return w;
}
function sentence(script, words) {
  const out = [];
  for (let i = 0; i < words; i++) {
    let w = word(script);
    const r = rnd();
    if (r < 0.05) w += ',';
    else if (r < 0.07) w += "'s";
    else if (r < 0.09) w = String(int(100000));
    else if (r < 0.1) w = '(' + w + ')';
    out.push(w);
  }
  return out.join(' ') + pick(['.', '.', '.', '!', '?', ';', ' —', '...']);
}
function cjkRun(n, pool) {
  let s = '';
  for (let i = 0; i < n; i++) s += pool[int(pool.length)];
  return s;
}
// Characters that stress splitting rules when randomly juxtaposed.
const chaosPool = [
  ...'abcXYZ', 'hello', 'The', 'ſ', 'ß', 'İ', 'é', 'e\u0301', '\u0301', ...'0123456789', '١', '٣', '१', '½', '²',
  ' ', ' ', ' ', '  ', '\t', '\n', '\r', '\r\n', '\u00a0', '\u3000', '\u200b', '\u200d',
  "'", "'s", "'S", "'ll", '’', '"', '.', ',', '!', '?', '-', '_', '/', '\\', '(', ')', '[', ']', '{', '}', '<', '>', '@', '#', '$', '%', '^', '&', '*', '+', '=', '|', '~', '`', ':', ';',
  '中', '文', '日本', 'カ', 'ｶ', '한', 'ж', 'Ω', 'ع', 'ـ', 'ש', 'क्ष', 'த', 'ก', '่',
  '😀', '👍🏽', '👨‍👩‍👧', '🇯🇵', '❤️', '𝕳', '𠀀', '\ufffd', '▁', 'Ġ', '##', '</w>',
];
function chaos(n) {
  let s = '';
  for (let i = 0; i < n; i++) s += pick(chaosPool);
  return s;
}
function jsonRecord(i) {
  const rec = {
    id: i,
    uuid: Array.from({ length: 4 }, () => int(0xffffffff).toString(16).padStart(8, '0')).join('-'),
    name: word('latin') + ' ' + word('latin'),
    score: Math.round(rnd() * 1e6) / 1e3,
    tags: Array.from({ length: int(4) }, () => word('latin')),
    active: rnd() < 0.5,
    note: rnd() < 0.3 ? sentence(pick(['cyrillic', 'greek', 'arabic']), 4) : null,
  };
  return JSON.stringify(rec);
}
function logLine() {
  const lvl = pick(['INFO', 'WARN', 'ERROR', 'DEBUG']);
  const t = `2024-0${1 + int(9)}-${String(1 + int(28)).padStart(2, '0')}T${String(int(24)).padStart(2, '0')}:${String(int(60)).padStart(2, '0')}:${String(int(60)).padStart(2, '0')}.${String(int(1000)).padStart(3, '0')}Z`;
  return `${t} ${lvl.padEnd(5)} [${word('latin')}] req=${int(1e9).toString(36)} took=${(rnd() * 500).toFixed(2)}ms bytes=${int(1 << 20)}`;
}
function codeLike() {
  const id = () => word('latin').replace(/[^a-zA-Z]/g, 'x') + (rnd() < 0.3 ? String(int(100)) : '');
  const lines = [];
  for (let i = 0; i < 12; i++) {
    const ind = '\t'.repeat(int(3)) + '    '.repeat(int(2));
    lines.push(pick([
      () => `${ind}${id()} := ${id()}(${id()}, ${int(1000)})`,
      () => `${ind}if ${id()} != nil && len(${id()}) > ${int(64)} {`,
      () => `${ind}return ${id()}.${id()}[${int(10)}:${int(20)}], nil`,
      () => `${ind}// ${sentence('latin', 6)}`,
      () => `${ind}def ${id()}(self, ${id()}=${int(9)}, *args):`,
      () => `${ind}${id()} = [${id()} ** 2 for ${id()} in range(${int(50)})]  # ${word('latin')}`,
      () => `${ind}}`,
      () => '',
    ])());
  }
  return lines.join('\n');
}

const synth = [];
const scripts = Object.keys(syl).filter((s) => s !== 'accented');
for (let i = 0; i < 16; i++) {
  const sc = scripts[i % scripts.length];
  const paras = [];
  for (let p = 0; p < 3; p++) paras.push(Array.from({ length: 3 + int(3) }, () => sentence(sc, 6 + int(12))).join(' '));
  synth.push([`pseudo-${sc}-${i}`, paras.join('\n\n')]);
}
for (let i = 0; i < 6; i++) {
  synth.push([`cjk-random-${i}`, cjkRun(120 + int(80), cjkCommon) + '。' + cjkRun(40, hira) + cjkRun(30, kata) + '、' + cjkRun(100, cjkCommon) + '！']);
}
for (let i = 0; i < 24; i++) synth.push([`chaos-${i}`, chaos(200 + int(300))]);
for (let i = 0; i < 5; i++) synth.push([`json-records-${i}`, Array.from({ length: 8 }, (_, k) => jsonRecord(i * 8 + k)).join('\n')]);
for (let i = 0; i < 4; i++) synth.push([`log-lines-${i}`, Array.from({ length: 12 }, logLine).join('\n')]);
for (let i = 0; i < 6; i++) synth.push([`code-like-${i}`, codeLike()]);
for (let i = 0; i < 4; i++) {
  let s = '';
  for (let k = 0; k < 60; k++) s += String(int(10 ** (1 + int(9)))) + pick([' ', ',', '.', '', '\n', ' + ', '-', ':', '  ']);
  synth.push([`number-soup-${i}`, s]);
}

// -------------------------------------------------- unicode_versions.txt
// Characters whose Unicode properties depend on the Unicode version of the
// tables in use. HF mixes versions: Oniguruma (regex \p{L}/\p{N}) knows
// Unicode 16, while BertPreTokenizer/Punctuation (unicode_categories crate)
// and BERT accent stripping use much older tables. Found by a sweep of every
// code point below U+32000 against npm tokenizers 0.23.2.
const cps = (...list) => list.flatMap((x) => (Array.isArray(x) ? Array.from({ length: x[1] - x[0] + 1 }, (_, i) => x[0] + i) : [x]));
const ctx = (list) => list.map((c) => { const ch = String.fromCodePoint(c); return `x${ch}y ${ch} a${ch}`; }).join(' ');
const unicodeVersions = [
  // \p{N} in Unicode 16 (Garay, Kirat Rai, Sunuwar, Gurung Khema, Ol Onal
  // digits, Myanmar Extended-C, Legacy Computing Supplement digits)
  ['u16-digits', ctx(cps([0x10d40, 0x10d43], [0x116d0, 0x116d2], 0x11bf0, 0x16130, 0x16d70, 0x1ccf0, 0x1e5f1))],
  // \p{L} in Unicode 15.1/16 (CJK Ext I, Garay, Todhri, Tulu-Tigalari,
  // Latin additions, Egyptian Hieroglyphs Ext-A, Sunuwar, Gurung Khema)
  ['u16-letters', ctx(cps(0x2ebf0, 0x2ebf1, 0x2ec00, 0x10d4a, 0x10d50, 0x105c0, 0x11380, 0x11390, 0x1c89, 0x1c8a, 0xa7cb, 0xa7dc, 0x13460, 0x11bc0, 0x16100, 0x16d40, 0x1e5d0))],
  // punctuation (Po) newer than HF's unicode_categories tables
  // (BertPreTokenizer, Punctuation pre-tokenizer)
  ['newer-punctuation', ctx(cps(0x61d, 0x9fd, 0xa76, 0xc77, 0xc84, 0x166d, 0x1b7d, [0x2e43, 0x2e46], 0x2e4f, 0x2e52, 0x2e5d, 0x11070, 0x1e95e))],
  // combining marks (Mn) and other chars newer than HF's tables (BERT
  // accent stripping / punctuation / control checks)
  ['newer-marks', ctx(cps(0x568, 0x7fd, 0x890, 0x898, 0x8ca, [0x1abf, 0x1ac1], 0x1df6, 0x1dfa, 0xc3c, 0xd00, 0xd81, 0xeba, 0xece, 0x1734, 0x180f, 0xa82c, 0x1cf00, 0x1e08f, 0x1e130, 0x16fe4))],
];

function write(file, cases) {
  const names = new Set();
  let out = '';
  for (const [name, text] of cases) {
    if (names.has(name) || /\s/.test(name)) throw new Error('bad/duplicate case name ' + name);
    names.add(name);
    if (text.includes('=====CASE ')) throw new Error('marker inside case ' + name);
    out += `=====CASE ${name}=====\n${text}\n`;
  }
  fs.writeFileSync(path.join(outDir, file), out);
  console.log(`${file}: ${cases.length} cases, ${Buffer.byteLength(out)} bytes`);
}
fs.mkdirSync(outDir, { recursive: true });
write('edge.txt', edge);
write('synthetic.txt', synth);
write('unicode_versions.txt', unicodeVersions);
