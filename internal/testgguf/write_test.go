package testgguf

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dynamo-go/dynamo/internal/jsonscan"
)

// Model directories the tests write from; the shared ones hold only
// tokenizer.json and tokenizer_config.json and may be absent.
const (
	demoDir   = "../../models/demo"
	qwen3Dir  = "../../../shared/testdata/models/qwen3"
	llama3Dir = "../../../shared/testdata/models/llama-3-8b-instruct"
)

// testModel is a model directory and what its GGUF should say.
type testModel struct {
	name, dir, arch string
	pre             string
	eos             string // tokenizer_config's eos_token
	addBOS          bool
}

var testModels = []testModel{
	{name: "demo", dir: demoDir, arch: "qwen3", pre: "gpt-2", eos: "<|im_end|>"},
	{name: "demo-llama", dir: demoDir, arch: "llama", pre: "gpt-2", eos: "<|im_end|>"},
	{name: "qwen3", dir: qwen3Dir, arch: "qwen3", pre: "qwen2", eos: "<|im_end|>"},
	{name: "llama-3", dir: llama3Dir, arch: "llama", pre: "llama-bpe", eos: "<|eot_id|>", addBOS: true},
}

// needDir skips when a shared test model is not checked out.
func needDir(t testing.TB, dir string) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(dir, "tokenizer.json")); err != nil {
		t.Skipf("%s/tokenizer.json not present (shared test data not checked out): %v", dir, err)
	}
}

// writeModel writes m into a temporary directory and returns the path
// and the options used.
func writeModel(t testing.TB, m testModel) (string, Options) {
	t.Helper()
	needDir(t, m.dir)
	opts, err := FromDir(m.dir)
	if err != nil {
		t.Fatal(err)
	}
	opts.Arch, opts.Seed = m.arch, 1
	path := filepath.Join(t.TempDir(), m.name+".gguf")
	start := time.Now()
	if err := Write(path, opts); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s in %v", m.name, time.Since(start))
	return path, opts
}

// hfVocab is tokenizer.json's id -> token text, added tokens included.
func hfVocab(t testing.TB, tokJSON []byte) map[int]string {
	t.Helper()
	var tj struct {
		AddedTokens []struct {
			ID      int    `json:"id"`
			Content string `json:"content"`
		} `json:"added_tokens"`
		Model struct {
			Vocab map[string]int `json:"vocab"`
		} `json:"model"`
	}
	if err := json.Unmarshal(tokJSON, &tj); err != nil {
		t.Fatal(err)
	}
	out := map[int]string{}
	for s, id := range tj.Model.Vocab {
		out[id] = s
	}
	for _, a := range tj.AddedTokens {
		out[a.ID] = a.Content
	}
	return out
}

func TestWrite(t *testing.T) {
	for _, m := range testModels {
		t.Run(m.name, func(t *testing.T) {
			path, opts := writeModel(t, m)
			g, err := readGGUF(path)
			if err != nil {
				t.Fatal(err)
			}
			checkFile(t, g, m, opts)
		})
	}
}

func checkFile(t *testing.T, g *ggufFile, m testModel, opts Options) {
	t.Helper()
	if g.magic != 0x46554747 || g.version != 3 {
		t.Fatalf("magic %#x version %d, want GGUF v3", g.magic, g.version)
	}
	if got := g.kv["general.architecture"]; got != m.arch {
		t.Errorf("general.architecture = %v, want %s", got, m.arch)
	}
	if got := g.kv["tokenizer.ggml.model"]; got != "gpt2" {
		t.Errorf("tokenizer.ggml.model = %v", got)
	}
	if got := g.kv["tokenizer.ggml.pre"]; got != m.pre {
		t.Errorf("tokenizer.ggml.pre = %v, want %s", got, m.pre)
	}

	// Vocabulary: size, a few token strings, types.
	hf := hfVocab(t, opts.TokenizerJSON)
	maxID := 0
	for id := range hf {
		maxID = max(maxID, id)
	}
	tokens, _ := g.kv["tokenizer.ggml.tokens"].([]any)
	types, _ := g.kv["tokenizer.ggml.token_type"].([]any)
	if len(tokens) != maxID+1 || len(types) != len(tokens) {
		t.Fatalf("%d tokens, %d types; tokenizer.json's max id is %d", len(tokens), len(types), maxID)
	}
	if got := g.kv[m.arch+".vocab_size"]; got != uint32(len(tokens)) {
		t.Errorf("%s.vocab_size = %v, want %d", m.arch, got, len(tokens))
	}
	for _, id := range []int{0, 1, 100, 255, 256, 300, maxID / 2, maxID} {
		want, ok := hf[id]
		if !ok {
			want = "[PAD" + itoa(id) + "]"
		}
		if tokens[id] != want {
			t.Errorf("token %d = %q, want %q", id, tokens[id], want)
		}
	}
	eosID, ok := g.kv["tokenizer.ggml.eos_token_id"].(uint32)
	if !ok || tokens[eosID] != m.eos {
		t.Errorf("eos_token_id = %v (%v), want %q", g.kv["tokenizer.ggml.eos_token_id"], tokens[min(int(eosID), len(tokens)-1)], m.eos)
	}
	if got := types[eosID]; got != int32(3) {
		t.Errorf("eos token type = %v, want 3 (CONTROL)", got)
	}
	if got := g.kv["tokenizer.ggml.add_bos_token"]; got != m.addBOS {
		t.Errorf("add_bos_token = %v, want %v", got, m.addBOS)
	}
	merges, _ := g.kv["tokenizer.ggml.merges"].([]any)
	if len(merges) == 0 || !strings.Contains(merges[0].(string), " ") {
		t.Errorf("merges: %d, first %v", len(merges), merges[:min(1, len(merges))])
	}

	// Chat template.
	var cfg struct {
		ChatTemplate any `json:"chat_template"`
	}
	_ = json.Unmarshal(opts.TokenizerConfigJSON, &cfg)
	want, _ := cfg.ChatTemplate.(string)
	if opts.ChatTemplate != "" {
		want = opts.ChatTemplate
	}
	if got, _ := g.kv["tokenizer.chat_template"].(string); got != want {
		t.Errorf("chat_template = %.60q..., want %.60q...", got, want)
	}

	// Hyperparameters and tensors.
	if got := g.kv[m.arch+".embedding_length"]; got != uint32(64) {
		t.Errorf("embedding_length = %v", got)
	}
	wantTensors := 3 + 2*9
	if m.arch == "qwen3" {
		wantTensors += 2 * 2
	}
	if len(g.tensors) != wantTensors {
		t.Errorf("%d tensors, want %d", len(g.tensors), wantTensors)
	}
	if g.dataOffset%g.alignment != 0 || g.alignment != 32 {
		t.Errorf("data section at %d, alignment %d", g.dataOffset, g.alignment)
	}
	var next uint64
	names := map[string]bool{}
	for _, ti := range g.tensors {
		names[ti.name] = true
		if wantType := uint32(len(ti.dims) - 1); ti.typ != wantType {
			t.Errorf("%s: %d dims, type %d; want F32 (0) norms and F16 (1) matrices", ti.name, len(ti.dims), ti.typ)
		}
		if ti.offset%g.alignment != 0 || ti.offset != next {
			t.Errorf("%s: offset %d, want %d (aligned to %d)", ti.name, ti.offset, next, g.alignment)
		}
		next = ti.offset + pad(ti.nbytes(), g.alignment)
	}
	if got, want := uint64(g.size), g.dataOffset+next; got != want {
		t.Errorf("file size %d, want %d (data at %d + %d)", got, want, g.dataOffset, next)
	}
	for _, n := range []string{"token_embd.weight", "output_norm.weight", "output.weight", "blk.1.ffn_down.weight"} {
		if !names[n] {
			t.Errorf("no tensor %s", n)
		}
	}
	if emb := g.tensors[0]; emb.name != "token_embd.weight" || emb.dims[0] != 64 || emb.dims[1] != uint64(len(tokens)) {
		t.Errorf("first tensor %s %v, want token_embd.weight [64 %d]", emb.name, emb.dims, len(tokens))
	}
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}

func TestWriteDeterministic(t *testing.T) {
	opts, err := FromDir(demoDir)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name string, seed int64) []byte {
		opts.Seed = seed
		p := filepath.Join(dir, name)
		if err := Write(p, opts); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	a, b, c := write("a", 7), write("b", 7), write("c", 8)
	if !bytes.Equal(a, b) {
		t.Error("the same seed wrote different files")
	}
	if bytes.Equal(a, c) {
		t.Error("different seeds wrote the same file")
	}
	g, err := readGGUF(filepath.Join(dir, "a"))
	if err != nil {
		t.Fatal(err)
	}
	vals, err := g.values(filepath.Join(dir, "a"), g.tensors[0], 1000)
	if err != nil {
		t.Fatal(err)
	}
	var sum, sq float64
	for _, v := range vals {
		sum += float64(v)
		sq += float64(v) * float64(v)
	}
	mean, std := sum/1000, sq/1000
	if mean > 0.005 || mean < -0.005 || std < 0.0002 || std > 0.0006 { // variance ~ 0.02^2
		t.Errorf("token_embd: mean %g, mean square %g; want ~0, ~4e-4", mean, std)
	}
	norm, err := g.values(filepath.Join(dir, "a"), g.tensors[1], 64)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range norm {
		if v != 1 {
			t.Fatalf("output_norm has %v, want 1", v)
		}
	}
}

// demoTokenizer returns the demo tokenizer.json with edit applied to its
// decoded JSON.
func demoTokenizer(t *testing.T, edit func(m map[string]any)) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(demoDir, "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestF16(t *testing.T) {
	for _, c := range []struct {
		f    float32
		want uint16
	}{
		{0, 0}, {1, 0x3c00}, {-2, 0xc000}, {0.5, 0x3800}, {65504, 0x7bff}, {65520, 0x7c00}, {1e9, 0x7c00},
		{float32(math.Ldexp(1, -24)), 0x0001}, {float32(math.Ldexp(1, -14)), 0x0400}, {float32(math.Ldexp(1, -26)), 0},
		{float32(math.Inf(-1)), 0xfc00}, {1 + 1.0/2048, 0x3c00}, {1 + 3.0/2048, 0x3c02}, {0.1, 0x2e66}, {0.02, 0x251f},
	} {
		if got := f16(c.f); got != c.want {
			t.Errorf("f16(%g) = %#04x, want %#04x", c.f, got, c.want)
		}
	}
	g := newGauss(3)
	for range 100000 {
		f := g.next() * 0.02
		if back := fromF16(f16(f)); math.Abs(float64(back-f)) > math.Abs(float64(f))/2048+math.Ldexp(1, -25) {
			t.Fatalf("f16 round trip of %g gave %g", f, back)
		}
	}
}

func TestUnsupported(t *testing.T) {
	split := func(regex string) map[string]any {
		return map[string]any{"type": "Sequence", "pretokenizers": []any{
			map[string]any{"type": "Split", "pattern": map[string]any{"Regex": regex}, "behavior": "Isolated", "invert": false},
			map[string]any{"type": "ByteLevel", "add_prefix_space": false, "use_regex": false},
		}}
	}
	for name, c := range map[string]struct {
		edit func(m map[string]any)
		want string
	}{
		"metaspace": {func(m map[string]any) {
			m["pre_tokenizer"] = map[string]any{"type": "Metaspace", "replacement": "▁"}
		}, `pre_tokenizer type "Metaspace"`},
		"prefix space": {func(m map[string]any) {
			m["pre_tokenizer"].(map[string]any)["add_prefix_space"] = true
		}, "add_prefix_space"},
		"unknown regex": {func(m map[string]any) { m["pre_tokenizer"] = split(`\p{N}+|\s+`) }, `Split regex "\\p{N}+|\\s+"`},
		"wordpiece":     {func(m map[string]any) { m["model"].(map[string]any)["type"] = "WordPiece" }, `model type "WordPiece"`},
		"byte fallback": {func(m map[string]any) { m["model"].(map[string]any)["byte_fallback"] = true }, "byte_fallback"},
		"normalizer": {func(m map[string]any) {
			m["normalizer"] = map[string]any{"type": "Lowercase"}
		}, `normalizer "Lowercase"`},
		"ignore merges": {func(m map[string]any) { m["model"].(map[string]any)["ignore_merges"] = true }, "ignore_merges"},
	} {
		t.Run(name, func(t *testing.T) {
			err := Write(filepath.Join(t.TempDir(), "x.gguf"), Options{TokenizerJSON: demoTokenizer(t, c.edit)})
			if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want ErrUnsupported mentioning %s", err, c.want)
			}
		})
	}
}

func TestPreFromSplit(t *testing.T) {
	for regex, want := range map[string]string{regexQwen2: "qwen2", regexLlama3: "llama-bpe"} {
		raw, _ := json.Marshal(map[string]any{"type": "Sequence", "pretokenizers": []any{
			map[string]any{"type": "Split", "pattern": map[string]any{"Regex": regex}, "behavior": "Isolated", "invert": false},
			map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false},
		}})
		if got, err := choosePre(raw); got != want || err != nil {
			t.Errorf("choosePre(%.40s...) = %q, %v; want %q", regex, got, err, want)
		}
	}
}

func TestMergePairs(t *testing.T) {
	var got []string
	if err := parseMerges(jsonscan.New([]byte(`[["Ġ", "t"], ["a b", "c"]]`)), &got); err != nil {
		t.Fatal(err)
	}
	if want := []string{"Ġ t", "aĠb c"}; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("merges = %q, want %q", got, want)
	}
}

func TestChatTemplateOverride(t *testing.T) {
	opts, err := FromDir(demoDir)
	if err != nil {
		t.Fatal(err)
	}
	opts.ChatTemplate = "{{ messages }}"
	p := filepath.Join(t.TempDir(), "m.gguf")
	if err := Write(p, opts); err != nil {
		t.Fatal(err)
	}
	g, err := readGGUF(p)
	if err != nil {
		t.Fatal(err)
	}
	if got := g.kv["tokenizer.chat_template"]; got != "{{ messages }}" {
		t.Errorf("chat_template = %q", got)
	}
}

// BenchmarkWriteQwen3 writes the Qwen3 vocabulary's model (151,669 x 64
// embedding) once per iteration.
func BenchmarkWriteQwen3(b *testing.B) {
	needDir(b, qwen3Dir)
	opts, err := FromDir(qwen3Dir)
	if err != nil {
		b.Fatal(err)
	}
	p := filepath.Join(b.TempDir(), "q.gguf")
	for b.Loop() {
		if err := Write(p, opts); err != nil {
			b.Fatal(err)
		}
	}
}

func TestFromDirJinja(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"tokenizer.json", "tokenizer_config.json"} {
		b, err := os.ReadFile(filepath.Join(demoDir, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "chat_template.jinja"), []byte("{{ jinja }}"), 0o644); err != nil {
		t.Fatal(err)
	}
	opts, err := FromDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if opts.ChatTemplate != "{{ jinja }}" {
		t.Errorf("ChatTemplate = %q, want chat_template.jinja's", opts.ChatTemplate)
	}
}

func TestTokenContent(t *testing.T) {
	for raw, want := range map[string]string{
		`"<s>"`: "<s>", `{"content": "</s>", "special": true}`: "</s>", `null`: "", ``: "",
	} {
		if got, err := tokenContent(json.RawMessage(raw)); got != want || err != nil {
			t.Errorf("tokenContent(%s) = %q, %v; want %q", raw, got, err, want)
		}
	}
	if _, err := tokenContent(json.RawMessage(`3`)); err == nil {
		t.Error("tokenContent(3) succeeded")
	}
}

func TestValidByteLevel(t *testing.T) {
	for tok, want := range map[string]bool{
		"Ġhello": true, "Ã©": true, "æ": false, "ĠæĹ": false, "æĹ¥": true, "Ċ": true, "ðŁļĢ": true, "ðŁļ": false, "\u4e00": false,
	} {
		if got := validByteLevel(tok); got != want {
			t.Errorf("validByteLevel(%q) = %v, want %v", tok, got, want)
		}
	}
}
