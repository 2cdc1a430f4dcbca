package pretok

import (
	"math/rand"
	"strings"
	"testing"

	"github.com/dlclark/regexp2"
)

// scannerCorpus mixes hand-picked edge cases with seeded random strings.
func scannerCorpus() []string {
	c := []string{
		"", " ", "  ", "a", "Hello world", "Hello  world", "a   b", "  leading", "trailing  ",
		"I'm you're he'll they've she'd it's", "I'M YOU'RE He'Ll THEY'VE 'S 'T 'D 'M", "'s 'x '' '''s q' '",
		"'ſ 'ſt ſ", "line1\nline2\r\nline3\r\r\n\n  \n x", "\r\n", "a\r\nb", " \r\n x", "x  \n\t y", "\t\tx",
		"12345678901 3.14 1,000", "x1y22z333w4444", "١٢٣ ²³ Ⅷ ४५", "你好，世界！", "日本語のテキスト",
		"😀👍🏽 👨\u200d👩\u200d👧", "e\u0301 a\u0301\u0302", "ﬁ ① Ａｂｃ", "<|endoftext|>hi<|startoftext|>",
		"<|endoftext <|x|>", "!!!???...", " !x ?y  .z\n\n", " (hello)\n", "$100 + 5% = <tag>", "snake_case",
		"\u3000x\u3000 \u00a0y\u0085z", "\u2028\u2029", "end\n", "end \n ", "a\u200bb", "\u00ad", "x\ufffdy",
	}
	pool := []rune("aAbBzZ0189 \t\n\r'sStTrRlLdDmMvVeE.,;!?-_()<>|\"éÉüßİſ你好カナー한\u0301\u0903١²Ⅷ\u00a0\u3000\u200b\u2581😀👍\u200d€$+=~@#%^&*{}")
	rng := rand.New(rand.NewSource(1))
	for i := 0; i < 3000; i++ {
		n := 1 + rng.Intn(30)
		var b strings.Builder
		for j := 0; j < n; j++ {
			b.WriteRune(pool[rng.Intn(len(pool))])
		}
		c = append(c, b.String())
	}
	return c
}

func allMatches(f finder, s string) [][2]int {
	var out [][2]int
	for at := 0; at <= len(s); {
		a, b, ok := f.find(s, at)
		if !ok {
			break
		}
		out = append(out, [2]int{a, b})
		if b == at && a == b {
			at++
		} else {
			at = b
		}
	}
	return out
}

// TestScannersMatchRegexp2 checks each hand-written scanner against the
// backtracking regexp2 engine on the same pattern: identical matches.
// U+017F is excluded for case-insensitive patterns: Oniguruma (HF) folds
// it to 's', regexp2 does not (TestLongS covers the Oniguruma behaviour).
func TestScannersMatchRegexp2(t *testing.T) {
	corpus := scannerCorpus()
	for _, p := range []string{PatternGPT2, PatternLlama3, PatternQwen2, PatternCLIP, PatternThreeDigits} {
		sc := knownScanner(p)
		re := regexp2.MustCompile(p, regexp2.Unicode)
		ref := regex2{re}
		bad := 0
		for _, s := range corpus {
			if strings.HasPrefix(p, "(?i:") && strings.ContainsRune(s, 'ſ') {
				continue
			}
			got, want := allMatches(sc, s), ref.all(nil, s)
			if !equalMatches(got, want) {
				bad++
				if bad < 5 {
					t.Errorf("pattern %.20q on %+q:\n got %v\nwant %v", p, s, got, want)
				}
			}
		}
		if bad > 0 {
			t.Errorf("pattern %.20q: %d mismatches", p, bad)
		}
	}
}

func equalMatches(a, b [][2]int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestLongS: Oniguruma's (?i:'s) also matches "'ſ" (U+017F folds to s).
func TestLongS(t *testing.T) {
	for _, p := range []string{PatternLlama3, PatternQwen2} {
		got := allMatches(knownScanner(p), "x'ſ")
		want := [][2]int{{0, 1}, {1, 4}}
		if !equalMatches(got, want) {
			t.Errorf("%v, want %v", got, want)
		}
	}
	// Case-sensitive GPT-2: "'ſ" is punctuation then a letter.
	if got := allMatches(gpt2{}, "'ſ"); !equalMatches(got, [][2]int{{0, 1}, {1, 3}}) {
		t.Errorf("gpt2: %v", got)
	}
}

func benchText() string {
	base := "The quick brown fox's 123 jumps  over the lazy dog.\n\tЗдравствуй, мир! 你好世界 😀 It's 2026-11-21; x=42.\r\n"
	return strings.Repeat(base, 4096)
}

func benchScanner(b *testing.B, f finder) {
	s := benchText()
	b.SetBytes(int64(len(s)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for at := 0; at < len(s); {
			_, e, ok := f.find(s, at)
			if !ok {
				break
			}
			at = e
		}
	}
}

func BenchmarkScanGPT2(b *testing.B)   { benchScanner(b, gpt2{}) }
func BenchmarkScanLlama3(b *testing.B) { benchScanner(b, llama{maxDigits: 3}) }
func BenchmarkScanQwen2(b *testing.B)  { benchScanner(b, llama{maxDigits: 1}) }
func BenchmarkScanRegexp2GPT2(b *testing.B) {
	s := benchText()[:64<<10]
	re := regex2{regexp2.MustCompile(PatternGPT2, regexp2.Unicode)}
	b.SetBytes(int64(len(s)))
	for i := 0; i < b.N; i++ {
		re.all(nil, s)
	}
}

// BenchmarkByteLevelPreTokenize is the full ByteLevel pre-tokenizer
// (GPT-2 split + byte-to-unicode mapping) on ~1 KB splits.
func BenchmarkByteLevelPreTokenize(b *testing.B) {
	p, err := FromJSON([]byte(`{"type":"ByteLevel","add_prefix_space":false,"trim_offsets":true,"use_regex":true}`))
	if err != nil {
		b.Fatal(err)
	}
	benchPreTok(b, p)
}

// BenchmarkQwen2PreTokenize is Qwen2's Sequence (Split + ByteLevel without
// regex) on ~1 KB splits.
func BenchmarkQwen2PreTokenize(b *testing.B) {
	p, err := FromJSON([]byte(`{"type":"Sequence","pretokenizers":[{"type":"Split","pattern":{"Regex":` +
		jsonString(PatternQwen2) + `},"behavior":"Isolated","invert":false},{"type":"ByteLevel","add_prefix_space":false,"trim_offsets":false,"use_regex":false}]}`))
	if err != nil {
		b.Fatal(err)
	}
	benchPreTok(b, p)
}

func benchPreTok(b *testing.B, p PreTokenizer) {
	s := benchText()
	var chunks []string
	for i := 0; i+1024 <= len(s); i += 1024 {
		chunks = append(chunks, s[i:i+1024])
	}
	b.SetBytes(int64(len(chunks) * 1024))
	b.ReportAllocs()
	var dst []string
	in := make([]string, 1)
	for i := 0; i < b.N; i++ {
		for _, c := range chunks {
			in[0] = c
			dst = p.PreTokenize(dst[:0], in)
		}
	}
}
