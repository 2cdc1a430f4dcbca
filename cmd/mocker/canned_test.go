package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"slices"
	"testing"

	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/backend/worker"
	"github.com/dynamo-go/dynamo/pkg/mocker"
	"github.com/dynamo-go/dynamo/pkg/mocker/modeldir"
	"github.com/dynamo-go/dynamo/pkg/preprocessor/tokenizer"
)

const demoModel = "../../models/demo"

// A mocker configured from --canned-responses answers a matching prompt
// with the entry's text, encoded with the model's tokenizer (its special
// tokens as their ids), one text per choice; a request with guided JSON
// gets an instance of the schema; anything else is generated as usual.
func TestCannedResponsesAnswerThroughTheEngine(t *testing.T) {
	file := filepath.Join(t.TempDir(), "canned.json")
	const weather = `<|im_start|>{"name": "get_weather", "arguments": {"city": "Paris"}}<|im_end|>`
	if err := writeFile(file, `[
		{"prompt_contains": "weather in Paris", "text": `+jsonString(weather)+`},
		{"prompt_contains": "guided Oslo", "text": "{\"city\": \"Oslo\"}"},
		{"prompt_contains": "weather", "texts": ["first answer", "second answer"]}
	]`); err != nil {
		t.Fatal(err)
	}
	m, err := parseMocker(t, nil, "--canned-responses", file, "--deterministic", "--speedup-ratio", "1000")
	if err != nil {
		t.Fatal(err)
	}
	cfg, _, err := m.config()
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	if _, err := modeldir.Fill(t.Context(), &cfg, worker.Config{ModelPath: demoModel}, "auto", m.canned, log); err != nil {
		t.Fatal(err)
	}
	e, err := mocker.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Start(t.Context(), 1); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = e.Cleanup(context.Background()) }()
	tok, err := tokenizer.FromDir(demoModel)
	if err != nil {
		t.Fatal(err)
	}

	// answer returns each choice's text (decoded with special tokens)
	// and ids.
	answer := func(prompt string, n int, guided string) ([]string, [][]uint32) {
		t.Helper()
		ids, err := tok.Encode(prompt, false)
		if err != nil {
			t.Fatal(err)
		}
		req := &backend.Request{Model: "demo", TokenIDs: ids, StopConditions: backend.StopConditions{MaxTokens: backend.Ptr(uint32(200))}}
		if n > 1 {
			req.SamplingOptions.N = backend.Ptr(n)
		}
		if guided != "" {
			req.SamplingOptions.GuidedDecoding = json.RawMessage(guided)
		}
		out := make([][]uint32, n)
		checked, done := backend.ValidateStream(func(o *backend.Output) error {
			i := 0
			if o.Index != nil {
				i = int(*o.Index)
			}
			out[i] = append(out[i], o.TokenIDs...)
			if o.IsTerminal() && o.FinishReason.Kind != backend.FinishEOS {
				t.Errorf("%q choice %d finished %v, want eos after the text", prompt, i, o.FinishReason)
			}
			return nil
		}, backend.ValidateChoices(req), backend.ValidatePanic(false))
		if err := done(e.Generate(t.Context(), req, checked)); err != nil {
			t.Fatal(err)
		}
		texts := make([]string, n)
		for i, ids := range out {
			texts[i], _ = tok.Decode(ids, false)
		}
		return texts, out
	}

	const chat = "<|im_start|>user\nWhat is the weather in Paris?<|im_end|>\n<|im_start|>assistant\n"
	texts, ids := answer(chat, 1, "")
	if texts[0] != weather {
		t.Errorf("answer %q, want the canned %q", texts[0], weather)
	}
	start, _ := tok.TokenToID("<|im_start|>")
	end, _ := tok.TokenToID("<|im_end|>")
	if ids[0][0] != start || ids[0][len(ids[0])-1] != end {
		t.Errorf("ids %v: want the special tokens' ids %d and %d at the ends", ids[0], start, end)
	}

	texts, _ = answer("<|im_start|>user\nweather in Rome?", 3, "")
	if want := []string{"first answer", "second answer", "second answer"}; !slices.Equal(texts, want) {
		t.Errorf("texts per choice %q, want %q", texts, want)
	}

	texts, _ = answer("<|im_start|>user\nnothing canned", 1, `{"json":{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer"}},"required":["city"]}}`)
	if texts[0] != `{"city":"string"}` {
		t.Errorf("guided json answer %q", texts[0])
	}
	texts, _ = answer("<|im_start|>user\nnothing canned", 1, `{"choice":["yes","no"]}`)
	if texts[0] != "yes" {
		t.Errorf("guided choice answer %q", texts[0])
	}

	// Guided decoding wins over a canned answer that does not satisfy it
	// (as tool_choice required over a model's own call format), and a
	// canned answer that does is said.
	const city = `{"json":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}`
	texts, _ = answer(chat, 1, city)
	if texts[0] != `{"city":"string"}` {
		t.Errorf("guided answer to a canned prompt %q, want the schema's instance", texts[0])
	}
	texts, _ = answer("<|im_start|>user\nguided Oslo", 1, city)
	if texts[0] != `{"city": "Oslo"}` {
		t.Errorf("canned answer that satisfies the schema %q, want it said", texts[0])
	}
	texts, _ = answer("<|im_start|>user\nweather in Rome?", 2, `{"choice":["first answer"]}`)
	if want := []string{"first answer", "first answer"}; !slices.Equal(texts, want) {
		t.Errorf("guided choice against canned texts %q, want %q", texts, want)
	}
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// outputVocabulary is the model's output vocabulary the mocker draws from
// (main_test.go checks deterministic tokens against it).
var outputVocabulary = modeldir.OutputVocabulary
