package reasoning

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestNames(t *testing.T) {
	names := Names()
	if !slices.IsSorted(names) {
		t.Errorf("Names not sorted: %v", names)
	}
	for _, want := range []string{"basic", "deepseek_r1", "qwen3", "granite", "mistral", "gpt_oss",
		"kimi", "kimi_k25", "step3", "nemotron_deci", "nemotron_nano", "nemotron3", "glm45", "minimax_append_think"} {
		if !slices.Contains(names, want) {
			t.Errorf("%q not registered", want)
		}
	}
}

func TestLookupIsCaseInsensitive(t *testing.T) {
	for _, in := range []string{"DeepSeek_R1", "QWEN3", "gpt_OSS"} {
		p, err := Lookup(in)
		if err != nil {
			t.Fatalf("Lookup(%q): %v", in, err)
		}
		if p.Name() != strings.ToLower(in) {
			t.Errorf("Lookup(%q).Name() = %q", in, p.Name())
		}
	}
}

func TestLookupUnknown(t *testing.T) {
	_, err := Lookup("deepseek")
	if !errors.Is(err, ErrUnknown) {
		t.Fatalf("Lookup(deepseek) = %v, want ErrUnknown", err)
	}
	msg := err.Error()
	if !strings.Contains(msg, `"deepseek"`) || !strings.Contains(msg, strings.Join(Names(), ", ")) {
		t.Errorf("message should name the input and list the known parsers: %s", msg)
	}
}

func TestNeedsSpecialTokens(t *testing.T) {
	for _, name := range Names() {
		want := name == "gpt_oss" || name == "mistral"
		if got := mustLookup(t, name).NeedsSpecialTokens(); got != want {
			t.Errorf("%s.NeedsSpecialTokens() = %v, want %v", name, got, want)
		}
	}
}
