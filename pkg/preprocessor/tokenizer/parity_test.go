package tokenizer_test

// Parity of the pure-Go tokenizer with Hugging Face `tokenizers` (npm
// binding, Rust core). Ground truth lives in testdata/golden and is produced
// by scripts/tokenizer/goldens.mjs; see testdata/README.md.
//
// Run one model or one case:
//
//	go test -run 'TestParity/llama-3-8b-instruct' ./pkg/preprocessor/tokenizer/
//	go test -run 'TestParity/qwen3/edge:emoji-zwj' ./pkg/preprocessor/tokenizer/
//
// Case names are "<corpus file>:<case>" in subtest names ("<file>/<case>" in
// the golden files).

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/dynamo-go/dynamo/pkg/preprocessor/tokenizer"
)

// goldenDir holds cases.json and <model>.json; TOKENIZER_GOLDEN_DIR points
// the test at another set (e.g. a throw-away stress corpus generated with
// goldens.mjs --corpus-dir/--golden-dir).
var goldenDir = func() string {
	if d := os.Getenv("TOKENIZER_GOLDEN_DIR"); d != "" {
		return d
	}
	return "testdata/golden"
}()

const (
	// defaultModelsRoot is /work/shared/testdata/models seen from this
	// package directory; override with TOKENIZER_MODELS_DIR.
	defaultModelsRoot = "../../../../shared/testdata/models"
)

// modelsRoot returns the directory holding <model>/tokenizer.json.
func modelsRoot() string {
	if d := os.Getenv("TOKENIZER_MODELS_DIR"); d != "" {
		return d
	}
	return defaultModelsRoot
}

// requireModelsRoot skips the test when the shared model files are absent.
func requireModelsRoot(tb testing.TB) string {
	tb.Helper()
	root := modelsRoot()
	if st, err := os.Stat(root); err != nil || !st.IsDir() {
		tb.Skipf("tokenizer models not found at %s (shared test data; set TOKENIZER_MODELS_DIR): skipping", root)
	}
	return root
}

func modelPath(root, model string) string {
	return filepath.Join(root, model, "tokenizer.json")
}

type corpusCase struct {
	Name string `json:"name"`
	Text string `json:"text"`
}

type casesFile struct {
	Format            int          `json:"format"`
	TokenizersVersion string       `json:"tokenizers_version"`
	Cases             []corpusCase `json:"cases"`
}

// goldenCase is one case of testdata/golden/<model>.json. Absent optional
// fields mean: ids_special == ids, decode == text, decode_skip == text.
type goldenCase struct {
	Name       string    `json:"name"`
	IDs        []uint32  `json:"ids"`
	IDsSpecial *[]uint32 `json:"ids_special"`
	Decode     *string   `json:"decode"`
	DecodeSkip *string   `json:"decode_skip"`
	Error      string    `json:"error"`
}

type goldenModel struct {
	Model             string       `json:"model"`
	TokenizersVersion string       `json:"tokenizers_version"`
	CasesSHA256       string       `json:"cases_sha256"`
	Cases             []goldenCase `json:"cases"`
}

var (
	casesOnce sync.Once
	casesVal  *casesFile
	casesSHA  string
	casesErr  error
)

// loadCases reads testdata/golden/cases.json (the corpus split into cases).
func loadCases(tb testing.TB) (*casesFile, string) {
	tb.Helper()
	casesOnce.Do(func() {
		b, err := os.ReadFile(filepath.Join(goldenDir, "cases.json"))
		if err != nil {
			casesErr = err
			return
		}
		b = bytes.TrimSuffix(b, []byte("\n"))
		sum := sha256.Sum256(b)
		casesSHA = hex.EncodeToString(sum[:])
		var cf casesFile
		if err := json.Unmarshal(b, &cf); err != nil {
			casesErr = fmt.Errorf("cases.json: %w", err)
			return
		}
		casesVal = &cf
	})
	if casesErr != nil {
		tb.Fatalf("loading golden cases: %v", casesErr)
	}
	return casesVal, casesSHA
}

func loadGolden(tb testing.TB, model string) *goldenModel {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join(goldenDir, model+".json"))
	if err != nil {
		tb.Fatalf("golden: %v", err)
	}
	var g goldenModel
	if err := json.Unmarshal(b, &g); err != nil {
		tb.Fatalf("golden %s: %v", model, err)
	}
	return &g
}

// goldenModels lists the models that have a golden file.
func goldenModels(tb testing.TB) []string {
	tb.Helper()
	ents, err := os.ReadDir(goldenDir)
	if err != nil {
		tb.Fatalf("reading %s: %v", goldenDir, err)
	}
	var out []string
	for _, e := range ents {
		n := e.Name()
		if e.IsDir() || !strings.HasSuffix(n, ".json") || n == "cases.json" {
			continue
		}
		out = append(out, strings.TrimSuffix(n, ".json"))
	}
	sort.Strings(out)
	return out
}

// subtestName turns "edge/emoji-zwj" into "edge:emoji-zwj" so that -run
// patterns address one case as TestParity/<model>/<file>:<case>.
func subtestName(caseName string) string { return strings.ReplaceAll(caseName, "/", ":") }

// maxDetailed is how many failing cases per model get a detailed report;
// later ones get one line each. Override with TOKENIZER_PARITY_DETAIL.
func maxDetailed() int {
	if v, err := strconv.Atoi(os.Getenv("TOKENIZER_PARITY_DETAIL")); err == nil {
		return v
	}
	return 8
}

type parityStats struct {
	model                                  string
	cases, enc, encSp, dec, decSkip, fails int
	loadErr                                string
	ran                                    bool
}

func TestParity(t *testing.T) {
	root := requireModelsRoot(t)
	cf, sha := loadCases(t)
	var summary []parityStats
	for _, model := range goldenModels(t) {
		st := parityStats{model: model}
		t.Run(model, func(t *testing.T) {
			st.ran = true
			path := modelPath(root, model)
			if _, err := os.Stat(path); err != nil {
				st.loadErr = "model absent"
				t.Skipf("%s absent: skipping %s", path, model)
			}
			g := loadGolden(t, model)
			if g.CasesSHA256 != sha {
				t.Fatalf("golden %s.json was generated from a different cases.json (sha %s, have %s): regenerate with scripts/tokenizer/goldens.mjs", model, short(g.CasesSHA256), short(sha))
			}
			if len(g.Cases) != len(cf.Cases) {
				t.Fatalf("golden %s has %d cases, cases.json %d", model, len(g.Cases), len(cf.Cases))
			}
			tok, err := tokenizer.FromFile(path)
			if err != nil {
				st.loadErr = err.Error()
				t.Fatalf("FromFile(%s): %v", path, err)
			}
			detail := maxDetailed()
			for i, gc := range g.Cases {
				cc := cf.Cases[i]
				if gc.Name != cc.Name {
					t.Fatalf("case %d: golden name %q != cases.json name %q", i, gc.Name, cc.Name)
				}
				if gc.Error != "" {
					t.Logf("case %s: HF returned an error (%s); not compared", gc.Name, gc.Error)
					continue
				}
				st.cases++
				t.Run(subtestName(gc.Name), func(t *testing.T) {
					verbose := st.fails < detail
					res := checkCase(t, tok, model, cc, gc, verbose)
					if res.enc {
						st.enc++
					}
					if res.encSp {
						st.encSp++
					}
					if res.dec {
						st.dec++
					}
					if res.decSkip {
						st.decSkip++
					}
					if !(res.enc && res.encSp && res.dec && res.decSkip) {
						st.fails++
						if verbose && st.fails == detail {
							t.Logf("(further failing cases of %s are reported in one line each; TOKENIZER_PARITY_DETAIL=n for more)", model)
						}
					}
				})
			}
			t.Logf("%s: %d cases: encode %d, encode+special %d, decode %d, decode skip-special %d",
				model, st.cases, st.enc, st.encSp, st.dec, st.decSkip)
		})
		summary = append(summary, st)
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "parity summary (HF tokenizers %s; passing cases per check):\n", cf.TokenizersVersion)
	fmt.Fprintf(&sb, "  %-32s %6s %8s %8s %8s %8s\n", "model", "cases", "enc", "enc+sp", "dec", "dec-skip")
	for _, s := range summary {
		if !s.ran {
			continue // filtered out by -run
		}
		if s.loadErr != "" {
			fmt.Fprintf(&sb, "  %-32s %s\n", s.model, "not run: "+firstLine(s.loadErr))
			continue
		}
		fmt.Fprintf(&sb, "  %-32s %6d %8d %8d %8d %8d\n", s.model, s.cases, s.enc, s.encSp, s.dec, s.decSkip)
	}
	t.Log(sb.String())
}

// TestParityGoldensCoverModels fails when a model directory has no golden
// file (new model added to the shared test data without regenerating).
func TestParityGoldensCoverModels(t *testing.T) {
	root := requireModelsRoot(t)
	have := map[string]bool{}
	for _, m := range goldenModels(t) {
		have[m] = true
	}
	ents, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		if _, err := os.Stat(modelPath(root, e.Name())); err != nil {
			continue // template-only model dir
		}
		if !have[e.Name()] {
			t.Errorf("model %s has a tokenizer.json but no testdata/golden/%s.json; regenerate: cd scripts/tokenizer && node goldens.mjs", e.Name(), e.Name())
		}
	}
}

type caseResult struct{ enc, encSp, dec, decSkip bool }

func checkCase(t *testing.T, tok *tokenizer.Tokenizer, model string, cc corpusCase, gc goldenCase, verbose bool) (r caseResult) {
	t.Helper()
	report := func(what, msg string) {
		if verbose {
			t.Errorf("%s %s: %s: %s\n  input (%d bytes): %s", model, cc.Name, what, msg, len(cc.Text), clip(strconv.Quote(cc.Text), 300))
		} else {
			t.Errorf("%s %s: %s mismatch", model, cc.Name, what)
		}
	}
	wantSp := gc.IDs
	if gc.IDsSpecial != nil {
		wantSp = *gc.IDsSpecial
	}
	for _, c := range []struct {
		name    string
		special bool
		want    []uint32
		ok      *bool
	}{
		{"Encode(addSpecialTokens=false)", false, gc.IDs, &r.enc},
		{"Encode(addSpecialTokens=true)", true, wantSp, &r.encSp},
	} {
		got, err := safeEncode(tok, cc.Text, c.special)
		switch {
		case err != nil:
			report(c.name, "error: "+err.Error())
		case !equalIDs(got, c.want):
			report(c.name, describeIDDiff(tok, c.want, got))
		default:
			*c.ok = true
		}
	}
	// Decoding is checked on the golden ids (with special tokens), so decoder
	// bugs are reported independently of encoder bugs.
	wantDec, wantDecSkip := cc.Text, cc.Text
	if gc.Decode != nil {
		wantDec = *gc.Decode
	}
	if gc.DecodeSkip != nil {
		wantDecSkip = *gc.DecodeSkip
	}
	for _, c := range []struct {
		name string
		skip bool
		want string
		ok   *bool
	}{
		{"Decode(skipSpecialTokens=false)", false, wantDec, &r.dec},
		{"Decode(skipSpecialTokens=true)", true, wantDecSkip, &r.decSkip},
	} {
		got, err := safeDecode(tok, wantSp, c.skip)
		switch {
		case err != nil:
			report(c.name, "error: "+err.Error())
		case got != c.want:
			report(c.name, describeTextDiff(c.want, got))
		default:
			*c.ok = true
		}
	}
	return r
}

// safeEncode converts a panic into an error so one bad case does not abort
// the whole model.
func safeEncode(tok *tokenizer.Tokenizer, text string, special bool) (ids []uint32, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	return tok.Encode(text, special)
}

func safeDecode(tok *tokenizer.Tokenizer, ids []uint32, skip bool) (s string, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	return tok.Decode(ids, skip)
}

func equalIDs(a, b []uint32) bool {
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

// describeIDDiff shows the first differing position with a window of ids and
// their token text (Decode of each single id, skipSpecialTokens=false).
func describeIDDiff(tok *tokenizer.Tokenizer, want, got []uint32) string {
	i := 0
	for i < len(want) && i < len(got) && want[i] == got[i] {
		i++
	}
	const before, after = 4, 6
	lo := max(i-before, 0)
	var sb strings.Builder
	fmt.Fprintf(&sb, "len want %d, got %d; first difference at index %d\n", len(want), len(got), i)
	row := func(label string, ids []uint32) {
		hi := min(i+after, len(ids))
		fmt.Fprintf(&sb, "    %s[%d:%d]:", label, lo, hi)
		if lo > 0 {
			sb.WriteString(" …")
		}
		for k := lo; k < hi; k++ {
			mark := ""
			if k == i {
				mark = ">>"
			}
			fmt.Fprintf(&sb, " %s%d=%s", mark, ids[k], tokenText(tok, ids[k]))
		}
		if hi < len(ids) {
			sb.WriteString(" …")
		}
		sb.WriteString("\n")
	}
	row("want", want)
	row("got ", got)
	return strings.TrimRight(sb.String(), "\n")
}

func tokenText(tok *tokenizer.Tokenizer, id uint32) string {
	s, err := safeDecode(tok, []uint32{id}, false)
	if err != nil {
		return "<" + firstLine(err.Error()) + ">"
	}
	return strconv.Quote(s)
}

// describeTextDiff shows the first differing byte offset with context.
func describeTextDiff(want, got string) string {
	i := 0
	for i < len(want) && i < len(got) && want[i] == got[i] {
		i++
	}
	// back up to a rune boundary so the window prints cleanly
	for i > 0 && i < len(want) && !utf8.RuneStart(want[i]) {
		i--
	}
	lo := max(i-40, 0)
	for lo > 0 && lo < len(want) && !utf8.RuneStart(want[lo]) {
		lo--
	}
	win := func(s string) string {
		if lo >= len(s) {
			return `""`
		}
		hi := min(i+40, len(s))
		return strconv.Quote(s[lo:hi])
	}
	return fmt.Sprintf("len want %d, got %d; first difference at byte %d\n    want[%d:]: %s\n    got [%d:]: %s",
		len(want), len(got), i, lo, win(want), lo, win(got))
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

func short(s string) string { return clip(s, 12) }

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// corpusText returns the text of every corpus case joined with "\n" — the
// same text scripts/tokenizer/bench.mjs measures.
func corpusText(tb testing.TB) string {
	tb.Helper()
	cf, _ := loadCases(tb)
	parts := make([]string, len(cf.Cases))
	for i, c := range cf.Cases {
		parts[i] = c.Text
	}
	return strings.Join(parts, "\n")
}
