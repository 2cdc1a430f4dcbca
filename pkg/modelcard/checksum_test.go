package modelcard

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func demoCard(t *testing.T) *Card {
	t.Helper()
	c, err := FromDir(demoDir, Options{Name: "demo"})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestChecksumStable(t *testing.T) {
	a, err := demoCard(t).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	b, err := demoCard(t).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Fatal("two cards from the same directory encode differently")
	}
	c, err := Unmarshal(a)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Verify(); err != nil {
		t.Fatal(err)
	}
	again, err := c.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, again) {
		t.Error("decode + encode changed the card")
	}
	if !strings.HasPrefix(c.MDCSum, "sha256:") || len(c.MDCSum) != len("sha256:")+64 {
		t.Errorf("mdc_sum %q", c.MDCSum)
	}
	// The encoding is readable: no HTML escaping of special tokens.
	if !bytes.Contains(a, []byte(`"eos_token":"<|im_end|>"`)) {
		t.Error("card JSON escapes < and >")
	}
	// Re-encoding with other escaping or whitespace keeps the same sum.
	var generic any
	if err := json.Unmarshal(a, &generic); err != nil {
		t.Fatal(err)
	}
	escaped, _ := json.MarshalIndent(generic, "", "  ")
	if _, err := Unmarshal(escaped); err != nil {
		t.Errorf("Unmarshal of a re-indented, HTML-escaped card: %v", err)
	}
}

func TestChecksumDetectsTampering(t *testing.T) {
	orig := demoCard(t)
	b, err := orig.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		mutate func(m map[string]any)
	}{
		{"display name", func(m map[string]any) { m["display_name"] = "other" }},
		{"context length", func(m map[string]any) { m["context_length"] = 8192 }},
		{"tokenizer contents and file sum", func(m map[string]any) {
			f := m["tokenizer_json"].(map[string]any)
			f["contents"] = "{}"
			f["checksum"] = sha256Sum([]byte("{}"))
		}},
		{"added field", func(m map[string]any) { m["lora"] = map[string]any{"name": "x"} }},
		{"missing sum", func(m map[string]any) { delete(m, "mdc_sum") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var m map[string]any
			if err := json.Unmarshal(b, &m); err != nil {
				t.Fatal(err)
			}
			tc.mutate(m)
			bad, _ := json.Marshal(m)
			if _, err := Unmarshal(bad); !errors.Is(err, ErrChecksum) {
				t.Fatalf("Unmarshal = %v, want ErrChecksum", err)
			}
		})
	}

	c := *orig
	c.MigrationLimit = 7
	if err := c.Verify(); !errors.Is(err, ErrChecksum) {
		t.Errorf("Verify after a change = %v, want ErrChecksum", err)
	}
	tok := *orig.TokenizerJSON
	tok.contents = append(bytes.Clone(tok.contents), ' ')
	c = *orig
	c.TokenizerJSON = &tok
	if _, err := c.Marshal(); err != nil {
		t.Fatal(err)
	}
	if err := c.Verify(); !errors.Is(err, ErrChecksum) || !strings.Contains(err.Error(), "tokenizer.json") {
		t.Errorf("Verify with a bad file checksum = %v, want ErrChecksum naming tokenizer.json", err)
	}
}

func TestChecksumIgnoresRuntimeConfig(t *testing.T) {
	a, b := demoCard(t), demoCard(t)
	b.RuntimeConfig = RuntimeConfig{TotalKVBlocks: 99, MaxNumSeqs: 3, DataParallelSize: 2}
	sa, _ := a.Checksum()
	sb, _ := b.Checksum()
	if sa != sb {
		t.Error("runtime_config changed the checksum; workers with different capacity would not group")
	}
}

func TestUnknownFieldsKept(t *testing.T) {
	b, err := demoCard(t).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	// A newer writer adds a field and signs the result.
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	m["needs"] = []any{"Prefill"}
	sum, err := checksumOf(m)
	if err != nil {
		t.Fatal(err)
	}
	m["mdc_sum"] = sum
	newer, _ := json.Marshal(m)

	c, err := Unmarshal(newer)
	if err != nil {
		t.Fatalf("Unmarshal of a newer card: %v", err)
	}
	if err := c.Verify(); err != nil {
		t.Errorf("Verify of a newer card: %v", err)
	}
	out, err := c.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(out, []byte(`"needs":["Prefill"]`)) {
		t.Error("unknown field lost in re-encoding")
	}
}

func TestUnmarshalInvalid(t *testing.T) {
	for _, in := range []string{``, `[]`, `null`, `{"display_name":`, `{} {}`} {
		if _, err := Unmarshal([]byte(in)); !errors.Is(err, ErrInvalid) {
			t.Errorf("Unmarshal(%q) = %v, want ErrInvalid", in, err)
		}
	}
}

func TestRecordRoundTrip(t *testing.T) {
	r, err := NewRecord("dynamo", "backend", "generate", 0x694d98147d54c0a0, demoCard(t))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := r.Key(), "v1/mdc/dynamo/backend/generate/694d98147d54c0a0"; got != want {
		t.Errorf("Key = %q, want %q", got, want)
	}
	b, err := json.Marshal(r) // escapes HTML inside card_json: the sum must survive
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte(`"type":"Model"`)) || !bytes.Contains(b, []byte(`"model_suffix":null`)) {
		t.Errorf("record JSON %.200s", b)
	}
	back, err := DecodeRecord(b)
	if err != nil {
		t.Fatal(err)
	}
	c, err := back.DecodeCard()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"demo"}, c.Names()); diff != "" {
		t.Error(diff)
	}
	if _, err := DecodeRecord([]byte(`{"type":"Endpoint"}`)); !errors.Is(err, ErrInvalid) {
		t.Errorf("DecodeRecord(Endpoint) = %v, want ErrInvalid", err)
	}
	if _, err := (&Record{}).DecodeCard(); !errors.Is(err, ErrInvalid) {
		t.Errorf("DecodeCard without a card = %v, want ErrInvalid", err)
	}
}

// demoSum is the demo card's checksum as an aggregated worker published
// it before roles were left out of the checksum; it must not change, so
// frontends of either version accept the cards of the other.
const demoSum = "sha256:694cc7596cfe89c51ccbaab02f721ad3daade6961084a90cf8ecdb8be7721192"

func TestChecksumIgnoresTheRole(t *testing.T) {
	sum := func(mode string, types []string) string {
		t.Helper()
		c, err := FromDir(demoDir, Options{Name: "demo", DisaggregationMode: mode, ModelTypes: types})
		if err != nil {
			t.Fatal(err)
		}
		b, err := c.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Unmarshal(b); err != nil {
			t.Fatalf("%s card does not verify: %v", mode, err)
		}
		return c.MDCSum
	}
	agg := sum("aggregated", []string{"chat", "completions"})
	if agg != demoSum {
		t.Errorf("aggregated demo card sum = %s, want the earlier %s", agg, demoSum)
	}
	for _, tc := range []struct {
		mode  string
		types []string
	}{
		{"", nil},
		{"decode", []string{"chat", "completions"}},
		{"prefill", []string{"prefill"}},
		{"prefill", []string{"prefill", "chat"}},
	} {
		if got := sum(tc.mode, tc.types); got != agg {
			t.Errorf("%s card with model types %v: sum %s, want the aggregated card's %s", tc.mode, tc.types, got, agg)
		}
	}
	// What the model is still counts on a prefill card.
	a, err := FromDir(demoDir, Options{Name: "demo", DisaggregationMode: "prefill", ModelTypes: []string{"prefill"}})
	if err != nil {
		t.Fatal(err)
	}
	a.ContextLength = 8
	if s, _ := a.Checksum(); s == agg {
		t.Error("a prefill card with another context length has the same sum")
	}
	// Only the role is neutral: an embedding model differs.
	if got := sum("aggregated", []string{"embedding"}); got == agg {
		t.Error("an embedding card has the chat card's sum")
	}
}
