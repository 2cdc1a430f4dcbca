package pretok

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func mustPT(t *testing.T, cfg string) PreTokenizer {
	t.Helper()
	p, err := FromJSON([]byte(cfg))
	if err != nil {
		t.Fatalf("FromJSON(%s): %v", cfg, err)
	}
	return p
}

func TestTable(t *testing.T) {
	for _, tc := range []struct {
		cfg, in string
		want    []string
	}{
		{`{"type":"ByteLevel","add_prefix_space":false}`, "Hello  world!", []string{"Hello", "Ġ", "Ġworld", "!"}},
		{`{"type":"ByteLevel","add_prefix_space":true}`, "I'm", []string{"ĠI", "'m"}},
		{`{"type":"ByteLevel","add_prefix_space":false,"use_regex":false}`, "a b", []string{"aĠb"}},
		{`{"type":"Split","pattern":{"Regex":` + jsonString(PatternLlama3) + `},"behavior":"Isolated","invert":false}`,
			"Hello 12345 world\n\n  x", []string{"Hello", " ", "123", "45", " world", "\n\n", " ", " x"}},
		{`{"type":"Split","pattern":{"String":"-"},"behavior":"MergedWithNext","invert":false}`, "a-b--c", []string{"a", "-b", "-", "-c"}},
		{`{"type":"Split","pattern":{"String":"-"},"behavior":"MergedWithPrevious","invert":false}`, "a-b--c", []string{"a-", "b-", "-", "c"}},
		{`{"type":"Split","pattern":{"String":"-"},"behavior":"Contiguous","invert":false}`, "a-b--c", []string{"a", "-", "b", "--", "c"}},
		{`{"type":"Split","pattern":{"String":"-"},"behavior":"Removed","invert":false}`, "a-b--c", []string{"a", "b", "c"}},
		{`{"type":"Metaspace","replacement":"▁","prepend_scheme":"always","split":true}`, "Hey  friend", []string{"▁Hey", "▁", "▁friend"}},
		{`{"type":"Metaspace","replacement":"▁","str_rep":"▁","add_prefix_space":true}`, "a b", []string{"▁a", "▁b"}},
		{`{"type":"Whitespace"}`, "Hi, you!!", []string{"Hi", ",", "you", "!!"}},
		{`{"type":"BertPreTokenizer"}`, "Hi, you$", []string{"Hi", ",", "you", "$"}},
		{`{"type":"Digits","individual_digits":true}`, "a12", []string{"a", "1", "2"}},
		{`{"type":"FixedLength","length":2}`, "abcde", []string{"ab", "cd", "e"}},
		{`{"type":"CharDelimiterSplit","delimiter":"x"}`, "axbxxc", []string{"a", "b", "c"}},
	} {
		if got := mustPT(t, tc.cfg).PreTokenize(nil, []string{tc.in}); !slices.Equal(got, tc.want) {
			t.Errorf("%s on %q = %q, want %q", tc.cfg, tc.in, got, tc.want)
		}
	}
}

// TestMetaspaceFirst: prepend_scheme "first" only prepends to the split
// that begins the whole input.
func TestMetaspaceFirst(t *testing.T) {
	p := mustPT(t, `{"type":"Metaspace","replacement":"▁","prepend_scheme":"first","split":true}`)
	if got := p.PreTokenize(nil, []string{"a b", "c"}); !slices.Equal(got, []string{"▁a", "▁b", "c"}) {
		t.Errorf("got %q", got)
	}
	sa := p.(StartAware)
	if got := sa.PreTokenizeAt(nil, []string{"a b"}, false); !slices.Equal(got, []string{"a", "▁b"}) {
		t.Errorf("atStart=false: got %q", got)
	}
	// After WhitespaceSplit removed leading spaces the first word no
	// longer starts at offset 0 (HF checks original offsets).
	q := mustPT(t, `{"type":"Sequence","pretokenizers":[{"type":"WhitespaceSplit"},{"type":"Metaspace","replacement":"▁","prepend_scheme":"first"}]}`)
	if got := q.PreTokenize(nil, []string{"  a b"}); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("got %q", got)
	}
	if got := q.PreTokenize(nil, []string{"a b"}); !slices.Equal(got, []string{"▁a", "b"}) {
		t.Errorf("got %q", got)
	}
}

func TestFromJSONErrors(t *testing.T) {
	if p, err := FromJSON([]byte("null")); p != nil || err != nil {
		t.Errorf("null: %v %v", p, err)
	}
	if p, err := FromJSON(nil); p != nil || err != nil {
		t.Errorf("empty: %v %v", p, err)
	}
	if _, err := FromJSON([]byte(`{"type":"Nope"}`)); !errors.Is(err, ErrUnsupported) {
		t.Errorf("unknown type: %v", err)
	}
	if _, err := FromJSON([]byte(`{"type":"Metaspace","replacement":"▁","add_prefix_space":false}`)); err == nil {
		t.Error("HF rejects add_prefix_space=false without prepend_scheme never")
	}
}

// TestAllModels: FromJSON accepts the pre_tokenizer of every shared model.
func TestAllModels(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(modelsDir, "*", "tokenizer.json"))
	if len(files) == 0 {
		t.Skipf("no tokenizer.json under %s: shared test data absent", modelsDir)
	}
	for _, f := range files {
		if _, err := os.Stat(f); err != nil {
			t.Fatal(err)
		}
		t.Run(filepath.Base(filepath.Dir(f)), func(t *testing.T) {
			raw := modelSection(t, filepath.Base(filepath.Dir(f)), "pre_tokenizer")
			if _, err := FromJSON(raw); err != nil {
				t.Errorf("%s: %v", f, err)
			}
		})
	}
}
