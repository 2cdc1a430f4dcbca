package toolcall_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/dynamo-go/dynamo/pkg/preprocessor/toolcall"
)

func TestNames(t *testing.T) {
	names := toolcall.Names()
	want := []string{"deepseek_v3", "deepseek_v3_1", "default", "harmony", "hermes", "llama3_json",
		"mistral", "nemotron_nano", "phi4", "pythonic", "qwen25", "qwen3_coder"}
	if !slices.Equal(names, want) {
		t.Errorf("Names() = %v, want %v", names, want)
	}
}

func TestLookupIgnoresCase(t *testing.T) {
	p, err := toolcall.Lookup("Hermes")
	if err != nil {
		t.Fatal(err)
	}
	if p.Name() != "hermes" {
		t.Errorf("Name() = %q, want hermes", p.Name())
	}
	if _, err := toolcall.Lookup("DEEPSEEK_V3_1"); err != nil {
		t.Error(err)
	}
}

func TestLookupUnknown(t *testing.T) {
	_, err := toolcall.Lookup("hermes2")
	if !errors.Is(err, toolcall.ErrUnknown) {
		t.Fatalf("err = %v, want ErrUnknown", err)
	}
	for _, n := range toolcall.Names() {
		if !strings.Contains(err.Error(), n) {
			t.Errorf("error %q does not list %q", err, n)
		}
	}
}

func TestNeedsSpecialTokens(t *testing.T) {
	for name, want := range map[string]bool{
		"harmony": true, "llama3_json": true, "mistral": true, "hermes": true,
		"deepseek_v3": true, "phi4": false,
	} {
		p, _ := toolcall.Lookup(name)
		if got := p.NeedsSpecialTokens(); got != want {
			t.Errorf("%s: NeedsSpecialTokens() = %v, want %v", name, got, want)
		}
	}
}
