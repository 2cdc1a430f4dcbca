// Sweeps every code point through HF tokenizers components.
const fs = require('fs');
const { Tokenizer } = require('tokenizers');
function mk(norm, pre){ return Tokenizer.fromString(JSON.stringify({version:"1.0",truncation:null,padding:null,added_tokens:[],normalizer:norm,pre_tokenizer:pre,post_processor:null,decoder:null,model:{type:"WordLevel",vocab:{"a":0},unk_token:"a"}})); }
const cps = [];
for (let c = 0; c <= 0x10FFFF; c++) { if (c >= 0xD800 && c <= 0xDFFF) continue; cps.push(c); }
const CH = 4096;
function chunks(f) { for (let i = 0; i < cps.length; i += CH) f(cps.slice(i, i + CH)); }
function ranges(list) { list.sort((a,b)=>a-b); const r=[]; for (const c of list){ if (r.length && r[r.length-1][1]===c-1) r[r.length-1][1]=c; else r.push([c,c]); } return r; }
const out = { classes: {}, norm: {} };
// Class by Split regex, invert, Removed: matched positions.
function regexClass(name, re) {
  const pt = mk(null, {type:'Split', pattern:{Regex:re}, behavior:'Removed', invert:true}).getPreTokenizer();
  const set = [];
  chunks((ch) => { const s = String.fromCodePoint(...ch); for (const [p,[a,b]] of pt.preTokenizeString(s)) for (let k=a;k<b;k++) set.push(ch[k]); });
  out.classes[name] = ranges(set);
}
regexClass('onig_L', '\\p{L}');
regexClass('onig_N', '\\p{N}');
regexClass('onig_s', '\\s');
// Removed-behaviour pretokenizers: uncovered positions.
function removedClass(name, cfg) {
  const pt = mk(null, cfg).getPreTokenizer();
  const set = [];
  chunks((ch) => { const s = String.fromCodePoint(...ch); const cov = new Uint8Array(ch.length); for (const [p,[a,b]] of pt.preTokenizeString(s)) for (let k=a;k<b;k++) cov[k]=1; for (let k=0;k<ch.length;k++) if(!cov[k]) set.push(ch[k]); });
  out.classes[name] = ranges(set);
}
removedClass('bert_punc', {type:'Punctuation', behavior:'Removed'});
removedClass('rust_whitespace', {type:'WhitespaceSplit'});
// Digits individual: "aXaYa", numeric X is its own piece.
{
  const pt = mk(null, {type:'Digits', individual_digits:true}).getPreTokenizer();
  const set = [];
  chunks((ch) => { let s='a'; for (const c of ch) s += String.fromCodePoint(c)+'a'; for (const [p,[a,b]] of pt.preTokenizeString(s)) if (b-a===1 && a%2===1) set.push(ch[(a-1)/2]); });
  out.classes['rust_numeric'] = ranges(set);
}
// Whitespace pre-tokenizer (\w+|[^\w\s]+): "aXa" -> word if one piece aXa; space if X not covered.
{
  const pt = mk(null, {type:'Whitespace'}).getPreTokenizer();
  const w = [], sp = [];
  chunks((ch) => { let s='a'; for (const c of ch) s += String.fromCodePoint(c)+'a';
    const cov = new Uint8Array(s.length), pieceOf = new Int32Array(s.length);
    let pi = 0; for (const [p,[a,b]] of pt.preTokenizeString(s)) { pi++; for (let k=a;k<b;k++){cov[k]=1; pieceOf[k]=pi;} }
    for (let k=0;k<ch.length;k++){ const pos=2*k+1; if(!cov[pos]) sp.push(ch[k]); else if (pieceOf[pos]===pieceOf[pos-1]) w.push(ch[k]); } });
  out.classes['regex_w'] = ranges(w); out.classes['regex_s'] = ranges(sp);
}
// Normalizers: per code point output (only non-identity).
const SEP = '#~#';
function normSweep(name, cfg) {
  const n = mk(cfg, null).getNormalizer();
  const changed = {}; const removed = [];
  const rec = (c, o) => { if (o === '') removed.push(c); else if (o !== String.fromCodePoint(c)) changed[c] = o; };
  chunks((ch) => {
    const s = SEP + ch.map((c)=>String.fromCodePoint(c)).join(SEP) + SEP;
    const parts = n.normalizeString(s).split(SEP);
    if (parts.length === ch.length + 2) { for (let k=0;k<ch.length;k++) rec(ch[k], parts[k+1]); }
    else { for (const c of ch) rec(c, n.normalizeString(String.fromCodePoint(c))); }
  });
  out.norm[name] = { removed: ranges(removed), changed };
}
normSweep('bert_clean', {type:'BertNormalizer', clean_text:true, handle_chinese_chars:false, strip_accents:false, lowercase:false});
normSweep('bert_strip', {type:'BertNormalizer', clean_text:false, handle_chinese_chars:false, strip_accents:true, lowercase:false});
normSweep('bert_chinese', {type:'BertNormalizer', clean_text:false, handle_chinese_chars:true, strip_accents:false, lowercase:false});
normSweep('lowercase', {type:'Lowercase'});
normSweep('strip_accents', {type:'StripAccents'});
normSweep('nfc', {type:'NFC'});
normSweep('nfd', {type:'NFD'});
normSweep('nfkc', {type:'NFKC'});
normSweep('nfkd', {type:'NFKD'});
normSweep('nmt', {type:'Nmt'});
fs.writeFileSync(process.argv[2], JSON.stringify(out));
for (const k in out.classes) console.log(k, out.classes[k].length, 'ranges');
for (const k in out.norm) console.log(k, out.norm[k].removed.length, 'removed ranges', Object.keys(out.norm[k].changed).length, 'changed');
