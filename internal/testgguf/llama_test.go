package testgguf

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/dynamo-go/dynamo/internal/testenv"
	"github.com/dynamo-go/dynamo/pkg/preprocessor/tokenizer"
)

// probeText mixes what tokenizers disagree on: non-ASCII letters, CJK,
// an emoji (4-byte UTF-8) and one joined by ZWJ, digit runs, whitespace
// runs with tabs and newlines, contractions (any case), punctuation runs.
const probeText = "Grüße, ü! 日本語のテキスト 🚀 😶\u200d🌫️ 12345 3.14159 1,000,000\n" +
	"  \t\n\n   don't I'll WE'VE she's    x\r\n" +
	"```go\nfunc main() {}\n```  ...!!?? ÀÉÎõü naïve café — “quotes” end. "

// probeText2 adds other scripts, fullwidth digits, CR LF, no-break and
// ideographic spaces, a ligature and contractions in odd cases. All is
// NFC: Qwen's tokenizer.json normalizes to NFC, llama.cpp does not, so
// decomposed text ("e\u0301") tokenizes differently (see nfcProbe).
const probeText2 = "Å ﬁ １２３ 한국어 العربية Ελληνικά \r\n\r\n\t\t x  \n y\u00a0z \u3000 end\n\n\n" +
	"'s 'S 'll 'LL 'Ll A'B 0x1F 1e-5 -42 ____ ==== ///"

// nfcProbe is text that NFC changes.
const nfcProbe = "cafe\u0301 e\u0301"

// probes are the texts to tokenize for a model: its special tokens around
// probeText, and probeText2.
var probes = map[string][]string{
	"demo":       {"<|begin_of_text|><|im_start|>user\n" + probeText + "<|im_end|>\n<|im_start|>assistant\n", probeText + "<|endoftext|>", probeText2},
	"demo-llama": {"<|begin_of_text|><|im_start|>user\n" + probeText + "<|im_end|>\n", probeText2},
	"qwen3": {"<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\n" + probeText + "<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n" + probeText + "<|endoftext|>",
		"<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call><|im_end|>",
		"<|im_start|><|im_start|> <|im_end|>x<think>y</think>z", probeText2},
	"llama-3": {"<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\n" + probeText + "<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n" + probeText,
		"<|reserved_special_token_5|>12345678 9876543210 <|end_of_text|>", probeText2},
}

// TestLlamaServer starts llama-server on each written model and checks
// that it loads, tokenizes the probes exactly as this project's tokenizer
// (Hugging Face's algorithm), and generates.
func TestLlamaServer(t *testing.T) {
	bin := testenv.NeedLlamaServer(t)
	for _, m := range testModels {
		t.Run(m.name, func(t *testing.T) {
			path, opts := writeModel(t, m)
			tok, err := tokenizer.FromBytes(opts.TokenizerJSON, tokenizer.WithConfig(opts.TokenizerConfigJSON))
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			srv := testenv.StartLlamaServer(t, bin, testenv.LlamaOptions{Model: path, Args: []string{"-c", "512", "--parallel", "1"}})
			t.Logf("llama-server ready in %v", time.Since(start))

			for i, probe := range probes[m.name] {
				want, err := tok.Encode(probe, false)
				if err != nil {
					t.Fatal(err)
				}
				var got struct {
					Tokens []uint32 `json:"tokens"`
				}
				post(t, srv.URL()+"/tokenize", map[string]any{"content": probe, "add_special": false, "parse_special": true}, &got)
				if !slices.Equal(got.Tokens, want) {
					t.Errorf("probe %d: llama.cpp and the tokenizer differ\n%s", i, diffIDs(tok, got.Tokens, want))
				} else {
					t.Logf("probe %d: %d tokens agree", i, len(want))
				}
			}

			// Known difference: llama.cpp does not normalize, so where the
			// tokenizer.json has an NFC normalizer (Qwen) decomposed text
			// tokenizes differently. Logged, not failed.
			want, err := tok.Encode(nfcProbe, false)
			if err != nil {
				t.Fatal(err)
			}
			var nfc struct {
				Tokens []uint32 `json:"tokens"`
			}
			post(t, srv.URL()+"/tokenize", map[string]any{"content": nfcProbe, "add_special": false, "parse_special": true}, &nfc)
			if !slices.Equal(nfc.Tokens, want) {
				t.Logf("decomposed (non-NFC) text: llama.cpp %v, tokenizer %v (llama.cpp does not apply the NFC normalizer)", nfc.Tokens, want)
			}

			prompt, err := tok.Encode("<|im_start|>user\nHello there<|im_end|>\n", false)
			if err != nil {
				t.Fatal(err)
			}
			var comp struct {
				Content         string   `json:"content"`
				Tokens          []uint32 `json:"tokens"`
				TokensPredicted int      `json:"tokens_predicted"`
				TokensEvaluated int      `json:"tokens_evaluated"`
			}
			post(t, srv.URL()+"/completion", map[string]any{
				"prompt": prompt, "n_predict": 4, "temperature": 0, "return_tokens": true, "ignore_eos": true,
			}, &comp)
			if len(comp.Tokens) != 4 || comp.TokensPredicted != 4 || comp.TokensEvaluated != len(prompt) {
				t.Errorf("completion: %d tokens %v (predicted %d, evaluated %d of %d), want 4", len(comp.Tokens), comp.Tokens, comp.TokensPredicted, comp.TokensEvaluated, len(prompt))
			}
			t.Logf("completion of %d prompt tokens: %v %q", len(prompt), comp.Tokens, comp.Content)

			// Sampled, longer: valid UTF-8 (or llama-server answers 500), and
			// not one token repeated.
			post(t, srv.URL()+"/completion", map[string]any{
				"prompt": prompt, "n_predict": 32, "temperature": 1, "seed": 3, "return_tokens": true,
			}, &comp)
			if distinct := len(slices.Compact(slices.Sorted(slices.Values(comp.Tokens)))); len(comp.Tokens) > 4 && distinct < 3 {
				t.Errorf("sampled completion is degenerate: %v", comp.Tokens)
			}

			// The chat template loads and renders.
			var chat struct {
				Choices []struct {
					Message struct {
						Content string `json:"content"`
					} `json:"message"`
				} `json:"choices"`
				Usage struct {
					PromptTokens     int `json:"prompt_tokens"`
					CompletionTokens int `json:"completion_tokens"`
				} `json:"usage"`
			}
			post(t, srv.URL()+"/v1/chat/completions", map[string]any{
				"messages": []map[string]string{{"role": "user", "content": "Hello"}}, "max_tokens": 4, "temperature": 0,
			}, &chat)
			if len(chat.Choices) != 1 || chat.Usage.PromptTokens < 3 {
				t.Errorf("chat completion: %+v", chat)
			}
			t.Logf("chat: %d prompt tokens, %d generated: %q", chat.Usage.PromptTokens, chat.Usage.CompletionTokens, chat.Choices[0].Message.Content)
		})
	}
}

func post(t *testing.T, url string, body, out any) {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(url, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var raw bytes.Buffer
	if _, err := raw.ReadFrom(resp.Body); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST %s: %s: %s", url, resp.Status, raw.String())
	}
	if err := json.Unmarshal(raw.Bytes(), out); err != nil {
		t.Fatalf("POST %s: %v: %s", url, err, raw.String())
	}
}

// diffIDs shows where two tokenizations part, with the tokens' text.
func diffIDs(tok *tokenizer.Tokenizer, got, want []uint32) string {
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	show := func(ids []uint32) string {
		end := min(len(ids), i+8)
		var b bytes.Buffer
		for _, id := range ids[i:end] {
			s, _ := tok.Decode([]uint32{id}, false)
			fmt.Fprintf(&b, " %d%q", id, s)
		}
		return b.String()
	}
	return fmt.Sprintf("first difference at %d of %d (llama.cpp) / %d (tokenizer)\n  llama.cpp:%s\n  tokenizer:%s", i, len(got), len(want), show(got), show(want))
}
