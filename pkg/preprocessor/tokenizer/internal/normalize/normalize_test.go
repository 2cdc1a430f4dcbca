package normalize

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestTable(t *testing.T) {
	for _, tc := range []struct{ cfg, in, want string }{
		{`{"type":"Lowercase"}`, "HeLLo İ Σ", "hello i\u0307 σ"},
		{`{"type":"NFKC"}`, "ﬁ①", "fi1"},
		{`{"type":"StripAccents"}`, "e\u0301a\u0903", "ea"},
		{`{"type":"Strip","strip_left":true,"strip_right":false}`, "  a  ", "a  "},
		{`{"type":"Replace","pattern":{"String":" "},"content":"▁"}`, "a b  c", "a▁b▁▁c"},
		{`{"type":"Replace","pattern":{"Regex":"\\s+"},"content":" "}`, "a \t\n b\u3000", "a b "},
		{`{"type":"Prepend","prepend":"▁"}`, "", ""},
		{`{"type":"Prepend","prepend":"▁"}`, "a", "▁a"},
		{`{"type":"BertNormalizer","clean_text":true,"handle_chinese_chars":true,"strip_accents":null,"lowercase":true}`,
			"Héllo\u0000\t你!", "hello  你 !"},
		{`{"type":"Nmt"}`, "a\u0001b\u200bc", "ab c"},
		{`{"type":"ByteLevel"}`, " a\n", "ĠaĊ"},
		{`{"type":"Sequence","normalizers":[{"type":"NFD"},{"type":"StripAccents"},{"type":"Lowercase"}]}`, "Crème", "creme"},
	} {
		n, err := FromJSON([]byte(tc.cfg))
		if err != nil {
			t.Fatalf("%s: %v", tc.cfg, err)
		}
		if got := n.Normalize(tc.in); got != tc.want {
			t.Errorf("%s on %q = %q, want %q", tc.cfg, tc.in, got, tc.want)
		}
	}
}

func TestFromJSONErrors(t *testing.T) {
	if n, err := FromJSON([]byte(" null ")); n != nil || err != nil {
		t.Errorf("null: %v %v", n, err)
	}
	if n, err := FromJSON(nil); n != nil || err != nil {
		t.Errorf("empty: %v %v", n, err)
	}
	if _, err := FromJSON([]byte(`{"type":"Nope"}`)); !errors.Is(err, ErrUnsupported) {
		t.Errorf("unknown type: %v", err)
	}
}

// TestAllModels: FromJSON accepts the normalizer of every shared model.
func TestAllModels(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(modelsDir, "*", "tokenizer.json"))
	if len(files) == 0 {
		t.Skipf("no tokenizer.json under %s: shared test data absent", modelsDir)
	}
	for _, f := range files {
		name := filepath.Base(filepath.Dir(f))
		t.Run(name, func(t *testing.T) {
			if _, err := FromJSON(modelSection(t, name, "normalizer")); err != nil {
				t.Errorf("%s: %v", f, err)
			}
		})
	}
}

func BenchmarkPrecompiledT5(b *testing.B) {
	raw, err := os.ReadFile(filepath.Join(modelsDir, "t5-small", "tokenizer.json"))
	if err != nil {
		b.Skipf("shared t5-small absent: %v", err)
	}
	var d struct{ Normalizer json.RawMessage }
	if err := json.Unmarshal(raw, &d); err != nil {
		b.Fatal(err)
	}
	n, err := FromJSON(d.Normalizer)
	if err != nil {
		b.Fatal(err)
	}
	s := strings.Repeat("The quick brown fox jumps over the lazy dog. Crème brûlée 你好 ", 64)
	b.SetBytes(int64(len(s)))
	for i := 0; i < b.N; i++ {
		n.Normalize(s)
	}
}
