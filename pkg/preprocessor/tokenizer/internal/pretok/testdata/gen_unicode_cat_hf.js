// Sweeps every code point through HF's Split regex (Oniguruma) for the
// general categories the o200k and DeepSeek-V3 patterns use.
//
//   NODE_PATH=/tmp/hf/node_modules node testdata/gen_unicode_cat_hf.js /tmp/hf_cat.json
//
// Verify with HF_CAT_SWEEP=/tmp/hf_cat.json go test -run TestCategorySweep .
const fs = require('fs');
const { Tokenizer } = require('tokenizers');
function mk(pre) { return Tokenizer.fromString(JSON.stringify({version:"1.0",truncation:null,padding:null,added_tokens:[],normalizer:null,pre_tokenizer:pre,post_processor:null,decoder:null,model:{type:"WordLevel",vocab:{"a":0},unk_token:"a"}})); }
const cps = [];
for (let c = 0; c <= 0x10FFFF; c++) { if (c >= 0xD800 && c <= 0xDFFF) continue; cps.push(c); }
const CH = 4096;
function ranges(list) { list.sort((a,b)=>a-b); const r=[]; for (const c of list){ if (r.length && r[r.length-1][1]===c-1) r[r.length-1][1]=c; else r.push([c,c]); } return r; }
const out = { classes: {} };
for (const name of ['Lu', 'Ll', 'Lt', 'Lm', 'Lo', 'M', 'P', 'S', 'L', 'N']) {
  const pt = mk({type:'Split', pattern:{Regex:'\\p{' + name + '}'}, behavior:'Removed', invert:true}).getPreTokenizer();
  const set = [];
  for (let i = 0; i < cps.length; i += CH) {
    const ch = cps.slice(i, i + CH);
    const s = String.fromCodePoint(...ch);
    for (const [p,[a,b]] of pt.preTokenizeString(s)) for (let k=a;k<b;k++) set.push(ch[k]);
  }
  out.classes[name] = ranges(set);
}
fs.writeFileSync(process.argv[2], JSON.stringify(out));
for (const k in out.classes) console.log(k, out.classes[k].length, 'ranges');
