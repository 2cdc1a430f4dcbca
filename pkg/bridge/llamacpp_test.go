package bridge_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/dynamo-go/dynamo/internal/testenv"
	"github.com/dynamo-go/dynamo/internal/testgguf"
	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/backend/backendtest"
	"github.com/dynamo-go/dynamo/pkg/bridge"
	"github.com/dynamo-go/dynamo/pkg/preprocessor/tokenizer"
)

const demoDir = "../../models/demo"

// realLlama starts llama-server on a random-weight GGUF of the demo
// model (with tweak applied to its tokenizer.json first, if any).
func realLlama(t *testing.T, tweak func(vocab map[string]any)) *testenv.LlamaServer {
	t.Helper()
	bin := testenv.NeedLlamaServer(t)
	opts, err := testgguf.FromDir(demoDir)
	if err != nil {
		t.Fatal(err)
	}
	if tweak != nil {
		var tj map[string]any
		if err := json.Unmarshal(opts.TokenizerJSON, &tj); err != nil {
			t.Fatal(err)
		}
		tweak(tj["model"].(map[string]any)["vocab"].(map[string]any))
		if opts.TokenizerJSON, err = json.Marshal(tj); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(t.TempDir(), "demo-q8_0.gguf")
	if err := testgguf.Write(path, opts); err != nil {
		t.Fatal(err)
	}
	return testenv.StartLlamaServer(t, bin, testenv.LlamaOptions{Model: path, Args: []string{"-c", "4096", "--parallel", "2", "--threads", "1", "--no-warmup"}})
}

// demoVocabulary is the demo model's tokenizer as the worker gives it to
// the bridge.
func demoVocabulary(t *testing.T) (*bridge.Vocabulary, *tokenizer.Tokenizer) {
	t.Helper()
	cfg, err := os.ReadFile(filepath.Join(demoDir, "tokenizer_config.json"))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.FromFile(filepath.Join(demoDir, "tokenizer.json"), tokenizer.WithConfig(cfg))
	if err != nil {
		t.Fatal(err)
	}
	v := &bridge.Vocabulary{Encode: func(s string) ([]uint32, error) { return tok.Encode(s, false) }}
	for _, id := range tok.SpecialTokens() {
		s, _ := tok.IDToToken(id)
		v.Special = append(v.Special, s)
	}
	return v, tok
}

func startBridge(t *testing.T, cfg bridge.Config) (*bridge.Engine, backend.Config, error) {
	t.Helper()
	cfg.Dialect, cfg.StartTimeout = bridge.DialectLlamaCpp, 10*time.Second
	e, err := bridge.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Cleanup(t.Context()) })
	ecfg, err := e.Start(t.Context(), 1)
	return e, ecfg, err
}

// Against a real llama-server: the engine's vocabulary is checked
// against the card's tokenizer (a GGUF of another name passes, and is
// served under the worker's name; one with other ids fails with the
// first differing ids), its /props make the native model (template, EOS
// ids), and its /apply-template and /tokenize answer TokenizeChat.
func TestLlamaCppEngine(t *testing.T) {
	srv := realLlama(t, nil)
	vocab, tok := demoVocabulary(t)

	t.Run("another name, the same vocabulary", func(t *testing.T) {
		_, ecfg, err := startBridge(t, bridge.Config{URL: srv.URL(), Models: []string{"Org/Demo-Instruct"}, Name: "demo", Vocabulary: vocab})
		if err != nil {
			t.Fatal(err)
		}
		if ecfg.Model != "demo" {
			t.Errorf("served as %q, want the worker's name demo", ecfg.Model)
		}
		n := ecfg.Native
		eos, _ := tok.TokenToID("<|im_end|>")
		if n == nil || n.ChatTemplate == "" || n.EOSToken != "<|im_end|>" || !slices.Equal(n.EOSTokenIDs, []uint32{eos}) || n.VocabSize != tok.VocabSize() {
			t.Errorf("native model %+v: want the GGUF's template, EOS <|im_end|> = [%d], %d tokens", n, eos, tok.VocabSize())
		}
		if ecfg.ContextLength != 2048 {
			t.Errorf("context length %d, want a slot's: 2048 (-c 4096 over two slots)", ecfg.ContextLength)
		}
	})

	t.Run("another name, no vocabulary to check: a mismatch", func(t *testing.T) {
		_, _, err := startBridge(t, bridge.Config{URL: srv.URL(), Models: []string{"Org/Demo-Instruct"}})
		if !errors.Is(err, bridge.ErrModelMismatch) {
			t.Errorf("Start: %v, want ErrModelMismatch", err)
		}
	})

	t.Run("TokenizeChat renders with the GGUF's template", func(t *testing.T) {
		e, _, err := startBridge(t, bridge.Config{URL: srv.URL()})
		if err != nil {
			t.Fatal(err)
		}
		msgs := json.RawMessage(`[{"role":"system","content":"Be brief."},{"role":"user","content":"Héllo 🙂 12345"}]`)
		got, err := e.TokenizeChat(t.Context(), &backend.TokenizeRequest{Messages: msgs, AddGenerationPrompt: true})
		if err != nil {
			t.Fatal(err)
		}
		want, _ := tok.Encode("<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHéllo 🙂 12345<|im_end|>\n<|im_start|>assistant\n", false)
		if !slices.Equal(got, want) {
			t.Errorf("chat tokens %v\nwant %v", got, want)
		}
		text := "<|im_start|>user\nplain text, 42<|im_end|>"
		got, err = e.TokenizeChat(t.Context(), &backend.TokenizeRequest{Prompt: &text})
		if want, _ := tok.Encode(text, false); err != nil || !slices.Equal(got, want) {
			t.Errorf("text tokens %v, %v; want %v", got, err, want)
		}
		if _, err := e.TokenizeChat(t.Context(), &backend.TokenizeRequest{Messages: json.RawMessage(`[{"role":"user"}]`)}); !errors.Is(err, backend.ErrInvalidArgument) {
			t.Errorf("a message without content: %v, want ErrInvalidArgument", err)
		}
	})

	t.Run("conformance kit", func(t *testing.T) {
		backendtest.Run(t, func(t *testing.T) backend.Engine {
			e, err := bridge.New(bridge.Config{Dialect: bridge.DialectLlamaCpp, URL: srv.URL(), StartTimeout: 10 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			return e
		})
	})
}

// A GGUF whose vocabulary has two ids swapped fails Start with the ids
// that differ, whatever its name.
func TestLlamaCppOtherVocabulary(t *testing.T) {
	srv := realLlama(t, func(v map[string]any) { v["e"], v["t"] = v["t"], v["e"] })
	vocab, _ := demoVocabulary(t)
	_, _, err := startBridge(t, bridge.Config{URL: srv.URL(), Vocabulary: vocab})
	if !errors.Is(err, bridge.ErrVocabMismatch) {
		t.Fatalf("Start: %v, want ErrVocabMismatch", err)
	}
	t.Logf("Start: %v", err)
}
