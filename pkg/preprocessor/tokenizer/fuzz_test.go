package tokenizer_test

// FuzzEncodeDecode checks properties that must hold for any input:
//
//   - Encode and Decode never panic, including on invalid UTF-8 (the Go API
//     takes arbitrary strings; HF's Rust API only ever sees valid UTF-8, so
//     for invalid input an error or any lossy result is acceptable, a panic
//     is not);
//   - Encode is deterministic (same ids twice; catches word-cache bugs);
//   - Encode(s, true) contains Encode(s, false) as a contiguous run (the
//     post-processors of these models only add tokens around the sequence);
//   - Decode of the ids Encode returned succeeds;
//   - round trip Decode(Encode(s, false), false) == s, asserted ONLY where HF
//     itself has that property (verified with npm tokenizers 0.23.2 on every
//     corpus case):
//       llama-3-8b-instruct  byte-level BPE, no normalizer: all valid UTF-8
//       qwen2.5-instruct     byte-level BPE with an NFC normalizer: only for
//                            valid UTF-8 already in NFC (x/text/unicode/norm)
//     (phi-2 and whisper-tiny round-trip too but are not in the fuzz set.)
//     No round trip for llama-2 (Prepend "▁"/byte fallback: a leading space
//     and literal "▁" are not preserved), t5-small (Precompiled normalizer,
//     Unigram <unk>), bert-base-uncased (lowercase, accent stripping,
//     WordPiece [UNK], decoder re-spacing).
//
// Models absent from the shared test data are skipped. Run with e.g.
//
//	go test -run '^$' -fuzz FuzzEncodeDecode -fuzztime 60s ./pkg/preprocessor/tokenizer/

import (
	"os"
	"sync"
	"testing"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/dynamo-go/dynamo/pkg/preprocessor/tokenizer"
)

type roundTrip int

const (
	rtNone roundTrip = iota // no round-trip property
	rtAll                   // every valid UTF-8 string round-trips
	rtNFC                   // valid UTF-8 strings in NFC round-trip
)

var fuzzModels = []struct {
	name string
	rt   roundTrip
}{
	{"llama-3-8b-instruct", rtAll},
	{"qwen2.5-instruct", rtNFC},
	{"llama-2-hf-internal-testing", rtNone},
	{"t5-small", rtNone},
	{"bert-base-uncased", rtNone},
}

type fuzzTok struct {
	name string
	rt   roundTrip
	tok  *tokenizer.Tokenizer
}

var (
	fuzzOnce sync.Once
	fuzzToks []fuzzTok
	fuzzErrs []string
)

func loadFuzzTokenizers(tb testing.TB) []fuzzTok {
	root := requireModelsRoot(tb)
	fuzzOnce.Do(func() {
		for _, m := range fuzzModels {
			p := modelPath(root, m.name)
			if _, err := os.Stat(p); err != nil {
				fuzzErrs = append(fuzzErrs, m.name+": absent, skipped")
				continue
			}
			tok, err := tokenizer.FromFile(p)
			if err != nil {
				fuzzErrs = append(fuzzErrs, m.name+": FromFile: "+err.Error())
				continue
			}
			fuzzToks = append(fuzzToks, fuzzTok{m.name, m.rt, tok})
		}
	})
	for _, e := range fuzzErrs {
		tb.Log(e)
	}
	if len(fuzzToks) == 0 {
		tb.Skip("no fuzz tokenizer could be loaded")
	}
	return fuzzToks
}

func FuzzEncodeDecode(f *testing.F) {
	// Seeds: every corpus case (short ones whole, long ones truncated) plus
	// hand-picked invalid UTF-8.
	if cf, _ := loadCases(f); cf != nil {
		for _, c := range cf.Cases {
			s := c.Text
			if len(s) > 512 {
				s = s[:512] // may cut a rune: also a useful invalid seed
			}
			f.Add(s)
		}
	}
	for _, s := range []string{
		"", " ", "\x00", "\xff", "\xc3", "a\xc3(b", "\xe2\x82", "\xf0\x9f\x98", "\xed\xa0\x80", // surrogate
		"\xf4\x90\x80\x80", "\xc0\xaf", "\xfe\xfe\xff\xff", "ok \xe4\xbd valid 你好 \x80\x80",
		"<|im_start|>\xffuser", "<s>\xc3</s>", "[CLS]\xf0[SEP]", "'s\xff's", "\xe2\x96\x81\xe2\x96",
	} {
		f.Add(s)
	}
	toks := loadFuzzTokenizers(f)

	f.Fuzz(func(t *testing.T, s string) {
		valid := utf8.ValidString(s)
		for _, ft := range toks {
			ids, err := safeEncode(ft.tok, s, false)
			if err != nil {
				if valid || isPanic(err) {
					t.Fatalf("%s: Encode(%q, false): %v", ft.name, s, err)
				}
				continue // invalid UTF-8 may be rejected
			}
			again, err := safeEncode(ft.tok, s, false)
			if err != nil || !equalIDs(ids, again) {
				t.Fatalf("%s: Encode(%q) not deterministic: %v vs %v (err %v)", ft.name, s, ids, again, err)
			}
			idsSp, err := safeEncode(ft.tok, s, true)
			if err != nil {
				t.Fatalf("%s: Encode(%q, true): %v", ft.name, s, err)
			}
			if !containsRun(idsSp, ids) {
				t.Fatalf("%s: Encode(%q, true) = %v does not contain Encode(s, false) = %v", ft.name, s, idsSp, ids)
			}
			dec, err := safeDecode(ft.tok, ids, false)
			if err != nil {
				t.Fatalf("%s: Decode(Encode(%q)): %v", ft.name, s, err)
			}
			if _, err := safeDecode(ft.tok, idsSp, true); err != nil {
				t.Fatalf("%s: Decode(Encode(%q, true), skip): %v", ft.name, s, err)
			}
			if !valid {
				continue
			}
			switch ft.rt {
			case rtAll:
			case rtNFC:
				if !norm.NFC.IsNormalString(s) {
					continue
				}
			default:
				continue
			}
			if dec != s {
				t.Fatalf("%s: round trip failed:\n  in : %q\n  ids: %v\n  out: %q", ft.name, s, ids, dec)
			}
		}
	})
}

func isPanic(err error) bool {
	return err != nil && len(err.Error()) >= 6 && err.Error()[:6] == "panic:"
}

// containsRun reports whether sub occurs contiguously in s.
func containsRun(s, sub []uint32) bool {
	if len(sub) == 0 {
		return true
	}
outer:
	for i := 0; i+len(sub) <= len(s); i++ {
		for k := range sub {
			if s[i+k] != sub[k] {
				continue outer
			}
		}
		return true
	}
	return false
}
