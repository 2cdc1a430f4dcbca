package pretok

import (
	"encoding/json"
	"math/rand"
	"os"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/dlclark/regexp2"
)

// catCorpus: edge cases and seeded random strings over small alphabets
// (one biased to the o200k letter classes, one to DeepSeek's P/S classes).
func catCorpus() []string {
	c := scannerCorpus()
	c = append(c, "HELLOworld", "HELLO", "helloWORLD", "HelloWorld", "ǅungla ǅUNGLA", "ʰX Xʰ xʰ ʰ",
		"\u0301A \u0301a A\u0301 a\u0301B", " \u0301", "x's X'S X'Sx DON'T", "a/b//c\n/d", " /\n/ ", "#abc #ABCé .net\n",
		"©®™ €£¥ ←→ ♠", "「引用」。、", "ｶﾀｶﾅ", "\u0000a \u200ba 1a", "你好abc世界カタカナーひらがな")
	pools := [][]rune{
		[]rune("AZÉΣaz éσǅǈʰーあ你ا\u0301\u0903\u20DD19٣ⅧsStTrReElLdDmMvV''' \t\r\n//.!$€、\u00a0"),
		[]rune("aAzZé你あカー#$+^`~-_'\"()[]{}\\/.,;:!?@€©「。，\u0301\u093f19٣\u0000\u200b \u3000\t\r\n😀"),
	}
	rng := rand.New(rand.NewSource(7))
	for i := 0; i < 20000; i++ {
		pool := pools[i%2]
		n := 1 + rng.Intn(16)
		var b strings.Builder
		for j := 0; j < n; j++ {
			b.WriteRune(pool[rng.Intn(len(pool))])
		}
		c = append(c, b.String())
	}
	return c
}

// TestCatScannersMatchRegexp2 checks the o200k and DeepSeek scanners
// against regexp2 on the same pattern. Strings with U+017F are skipped for
// o200k: Oniguruma folds it to 's' in (?i:'s), regexp2 does not (the HF
// golden test covers it).
func TestCatScannersMatchRegexp2(t *testing.T) {
	corpus := catCorpus()
	for _, c := range []struct {
		p  string
		sc finder
	}{
		{PatternO200k, o200k{}}, {PatternDeepSeekV3, deepseek{}}, {PatternDeepSeekCJK, deepseekCJK{}}, {PatternDigits3, digits3{}},
	} {
		ref := regex2{regexp2.MustCompile(c.p, regexp2.Unicode)}
		bad := 0
		for _, s := range corpus {
			if c.p == PatternO200k && strings.ContainsRune(s, 'ſ') {
				continue
			}
			got, want := allMatches(c.sc, s), ref.all(nil, s)
			if !equalMatches(got, want) {
				bad++
				if bad < 5 {
					t.Errorf("pattern %.20q on %+q:\n got %v\nwant %v", c.p, s, got, want)
				}
			}
		}
		if bad > 0 {
			t.Errorf("pattern %.20q: %d/%d mismatches", c.p, bad, len(corpus))
		}
	}
}

// TestHFGoldenCat compares the scanners (directly, and through FromJSON)
// with HF's splits (testdata/hf_golden_cat.json from
// gen_hf_golden_cat.js; HF_CAT_GOLDEN overrides the file).
func TestHFGoldenCat(t *testing.T) {
	path := os.Getenv("HF_CAT_GOLDEN")
	if path == "" {
		path = "testdata/hf_golden_cat.json"
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var g struct {
		Corpus []string
		Cases  []struct {
			Name   string
			Config json.RawMessage
			Out    [][]string
		}
	}
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatal(err)
	}
	scanners := map[string]finder{"O200k": o200k{}, "DeepSeekV3Split": deepseek{}, "DeepSeekCJK": deepseekCJK{}, "Digits3": digits3{}}
	for _, c := range g.Cases {
		check := func(t *testing.T, p PreTokenizer) {
			bad := 0
			for i, in := range g.Corpus {
				got := p.PreTokenize(nil, []string{in})
				want := c.Out[i]
				if !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
					bad++
					if bad <= 5 {
						t.Errorf("PreTokenize(%+q)\n got %+q\nwant %+q", in, got, want)
					}
				}
			}
			if bad > 0 {
				t.Errorf("%d/%d mismatches", bad, len(g.Corpus))
			}
		}
		t.Run(c.Name, func(t *testing.T) {
			p, err := FromJSON(c.Config)
			if err != nil || p == nil {
				t.Fatalf("FromJSON: %v, %v", p, err)
			}
			check(t, p)
		})
		if sc, ok := scanners[c.Name]; ok {
			t.Run(c.Name+"/scanner", func(t *testing.T) {
				check(t, impl{&splitter{f: sc, b: isolated}})
			})
		}
	}
}

// TestCategorySweep compares every code point's category bits with HF's
// Oniguruma classes (HF_CAT_SWEEP: output of testdata/gen_unicode_cat_hf.js).
func TestCategorySweep(t *testing.T) {
	p := os.Getenv("HF_CAT_SWEEP")
	if p == "" {
		t.Skip("HF_CAT_SWEEP not set (path to the output of testdata/gen_unicode_cat_hf.js)")
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var s hfSweep
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	in := func(name string) func(rune) bool { return inRanges(s.Classes[name]) }
	lu, ll, lt, lm, lo, m, pu, sy, l, n := in("Lu"), in("Ll"), in("Lt"), in("Lm"), in("Lo"), in("M"), in("P"), in("S"), in("L"), in("N")
	var diff []rune
	for r := rune(0); r <= utf8.MaxRune; r++ {
		if r >= 0xD800 && r <= 0xDFFF {
			continue
		}
		var want uint8
		if lu(r) || lt(r) || lm(r) || lo(r) || m(r) {
			want |= fU
		}
		if ll(r) || lm(r) || lo(r) || m(r) {
			want |= fW
		}
		if l(r) {
			want |= fL
		}
		if n(r) {
			want |= fN
		}
		if m(r) {
			want |= fM
		}
		if pu(r) || sy(r) {
			want |= fPS
		}
		if class(r) == cSpace { // \s: checked against HF by TestUnicodeSweep
			want |= fSp
		}
		if catOf(r) != want {
			diff = append(diff, r)
		}
	}
	if len(diff) > 0 {
		t.Errorf("%d code points differ: %s", len(diff), fmtRunes(diff, 40))
	}
}

func BenchmarkScanO200k(b *testing.B)        { benchScanner(b, o200k{}) }
func BenchmarkScanDeepSeekV3(b *testing.B)   { benchScanner(b, deepseek{}) }
func BenchmarkScanDeepSeekCJK(b *testing.B)  { benchScanner(b, deepseekCJK{}) }
func BenchmarkScanDigits3(b *testing.B)      { benchScanner(b, digits3{}) }
func BenchmarkScanRegexp2O200k(b *testing.B) { benchRegexp2(b, PatternO200k) }
func BenchmarkScanRegexp2DeepSeekV3(b *testing.B) {
	benchRegexp2(b, PatternDeepSeekV3)
}
func BenchmarkScanRegexp2DeepSeekCJK(b *testing.B) { benchRegexp2(b, PatternDeepSeekCJK) }

func benchRegexp2(b *testing.B, p string) {
	s := benchText()[:64<<10]
	re := regex2{regexp2.MustCompile(p, regexp2.Unicode)}
	b.SetBytes(int64(len(s)))
	for i := 0; i < b.N; i++ {
		re.all(nil, s)
	}
}

// BenchmarkDeepSeekV3PreTokenize is DeepSeek-V3's full Sequence (three
// Splits + ByteLevel without regex) on ~1 KB splits.
func BenchmarkDeepSeekV3PreTokenize(b *testing.B) {
	sp := func(p string) string {
		return `{"type":"Split","pattern":{"Regex":` + jsonString(p) + `},"behavior":"Isolated","invert":false},`
	}
	p, err := FromJSON([]byte(`{"type":"Sequence","pretokenizers":[` + sp(`\p{N}{1,3}`) + sp(PatternDeepSeekCJK) + sp(PatternDeepSeekV3) +
		`{"type":"ByteLevel","add_prefix_space":false,"trim_offsets":false,"use_regex":false}]}`))
	if err != nil {
		b.Fatal(err)
	}
	benchPreTok(b, p)
}

// BenchmarkO200kPreTokenize is gpt-oss's Sequence (Split + ByteLevel
// without regex) on ~1 KB splits.
func BenchmarkO200kPreTokenize(b *testing.B) {
	p, err := FromJSON([]byte(`{"type":"Sequence","pretokenizers":[{"type":"Split","pattern":{"Regex":` +
		jsonString(PatternO200k) + `},"behavior":"Isolated","invert":false},{"type":"ByteLevel","add_prefix_space":false,"trim_offsets":false,"use_regex":false}]}`))
	if err != nil {
		b.Fatal(err)
	}
	benchPreTok(b, p)
}
