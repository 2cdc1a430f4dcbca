package modelcard

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// llamaTemplate stands for the template llama.cpp reports from a GGUF file.
const llamaTemplate = "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}<|im_start|>assistant\n"

var engineBoth = RuntimeConfig{Preprocessing: ProcessingEngine, Postprocessing: ProcessingEngine, TotalKVBlocks: 64}

func engineCard(t *testing.T) *Card {
	t.Helper()
	c, err := FromEngine(EngineModel{ChatTemplate: llamaTemplate, BOSToken: "<s>", EOSToken: "<|im_end|>", EOSTokenIDs: []uint32{2, 7, 2}, VocabSize: 32000},
		Options{Name: "tiny", Aliases: []string{"tiny-gguf"}, Source: "/models/tiny.gguf", ContextLength: 2048, MigrationLimit: 2, Runtime: engineBoth})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// A card built from what the engine reports has no model files but its
// chat template, travels through Marshal/Unmarshal with its checksum, and
// loads on the frontend side from its worker's files.
func TestFromEngineRoundTrips(t *testing.T) {
	c := engineCard(t)
	if c.HasTokenizer() || c.TokenizerConfigJSON != nil || c.ConfigJSON != nil || c.GenerationConfigJSON != nil {
		t.Fatal("a card from the engine names model files")
	}
	want := struct {
		Names     []string
		Source    string
		Type      ModelType
		Input     ModelInput
		Worker    WorkerType
		Ctx, BS   uint32
		Migration uint32
		Vocab     uint32
		EOS       []uint32
		Special   SpecialTokens
	}{[]string{"tiny", "tiny-gguf"}, "/models/tiny.gguf", ModelChat | ModelCompletions, InputTokens, WorkerAggregated, 2048, DefaultBlockSize, 2, 32000,
		[]uint32{2, 7}, SpecialTokens{BOS: "<s>", EOS: "<|im_end|>"}}
	b, err := c.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte(`"tokenizer_json":null`)) {
		t.Errorf("card JSON %s: want tokenizer_json null", b)
	}
	back, err := Unmarshal(b)
	if err != nil {
		t.Fatalf("Unmarshal: %v", err)
	}
	if err := back.Verify(); err != nil {
		t.Fatalf("Verify: %v", err)
	}
	for _, card := range []*Card{c, back} {
		got := want
		got.Names, got.Source, got.Type, got.Input, got.Worker = card.Names(), card.SourcePath, card.ModelType, card.ModelInput, card.WorkerType
		got.Ctx, got.BS, got.Migration, got.Vocab = card.ContextLength, card.KVCacheBlockSize, card.MigrationLimit, card.VocabSize
		got.EOS, got.Special = card.GenConfig.EOSTokenIDs, card.SpecialTokens
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("card (-want +got):\n%s", diff)
		}
	}
	if back.MDCSum != c.MDCSum || back.RuntimeConfig.Processing() != engineBoth.Processing() {
		t.Errorf("mdc_sum %s (want %s), processing %+v", back.MDCSum, c.MDCSum, back.RuntimeConfig.Processing())
	}

	// The frontend fetches the template from the worker, which serves
	// the files of its own card.
	files := map[string][]byte{}
	for _, f := range c.Files() {
		files[f.Checksum] = f.Bytes()
	}
	if len(files) != 1 || back.Size() != int64(len(llamaTemplate)) || back.Loaded() {
		t.Fatalf("files %d, size %d, loaded before Load %v: want the template alone, unloaded", len(files), back.Size(), back.Loaded())
	}
	if err := back.Load(context.Background(), func(_ context.Context, f *File) ([]byte, error) { return files[f.Checksum], nil }); err != nil {
		t.Fatalf("Load: %v", err)
	}
	if back.ChatTemplate.Source != TemplateEngine || back.ChatTemplate.Select(false) != llamaTemplate || !back.Loaded() {
		t.Errorf("template %+v after Load", back.ChatTemplate)
	}

	// No template: no files at all; the engine still renders chat.
	bare, err := FromEngine(EngineModel{}, Options{Name: "bare", Runtime: engineBoth})
	if err != nil {
		t.Fatal(err)
	}
	if bare.ChatTemplate != nil || len(bare.Files()) != 0 || bare.ModelType != ModelChat|ModelCompletions || bare.SourcePath != "" {
		t.Errorf("bare card: template %v, files %d, type %s, source %q", bare.ChatTemplate, len(bare.Files()), bare.ModelType, bare.SourcePath)
	}
	rec, err := NewRecord("dynamo", "backend", "generate", 1, bare)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rec.DecodeCard(); err != nil {
		t.Errorf("DecodeCard: %v", err)
	}
}

func TestFromEngineRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts Options
		want []string // in the error message
	}{
		{"no name", Options{Runtime: engineBoth}, []string{"served model name"}},
		{"frontend processing", Options{Name: "x"}, []string{"both sides", `preprocessing "frontend"`}},
		{"frontend postprocessing", Options{Name: "x", Runtime: RuntimeConfig{Preprocessing: ProcessingEngine}}, []string{"both sides", `postprocessing "frontend"`}},
		{"worker postprocessing", Options{Name: "x", Runtime: RuntimeConfig{Preprocessing: ProcessingEngine, Postprocessing: ProcessingWorker}}, []string{"both sides", `postprocessing "worker"`}},
		{"unknown processing", Options{Name: "x", Runtime: RuntimeConfig{Preprocessing: "gpu", Postprocessing: ProcessingEngine}}, []string{`preprocessing "gpu"`}},
		{"embedding", Options{Name: "x", ModelTypes: []string{"embedding"}, Runtime: engineBoth}, []string{"embedding needs frontend processing", "--model-path"}},
		{"tensor", Options{Name: "x", ModelTypes: []string{"chat", "tensor"}, Runtime: engineBoth}, []string{"TensorBased"}},
		{"custom template", Options{Name: "x", ChatTemplateFile: "t.jinja", Runtime: engineBoth}, []string{"t.jinja", "--chat-template-file"}},
		{"negative context", Options{Name: "x", ContextLength: -1, Runtime: engineBoth}, []string{"context length -1"}},
		{"bad mode", Options{Name: "x", DisaggregationMode: "sideways", Runtime: engineBoth}, []string{"sideways"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := FromEngine(EngineModel{EOSTokenIDs: []uint32{2}}, tc.opts)
			if err == nil {
				t.Fatalf("card %+v, want an error", c)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("%v: want ErrInvalid", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%v: want it to say %q", err, w)
				}
			}
		})
	}
	c, err := FromEngine(EngineModel{}, Options{Name: "x", ModelTypes: []string{"completions"}, Runtime: engineBoth})
	if err != nil || c.ModelType != ModelCompletions {
		t.Errorf("completions only: %v, %v", c, err)
	}
}

// A card without tokenizer.json is refused, as before, wherever its
// engine does not process both sides: by Marshal on the worker, and by
// Unmarshal, Verify and Load on the frontend.
func TestCardWithoutTokenizerNeedsTheEngineOnBothSides(t *testing.T) {
	c := engineCard(t)
	b, err := c.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	for _, rc := range []RuntimeConfig{{}, {Preprocessing: ProcessingEngine}, {Postprocessing: ProcessingEngine}} {
		// runtime_config is not under the checksum: only the modes differ.
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		m["runtime_config"] = rc
		other, _ := json.Marshal(m)
		if _, err := Unmarshal(other); !errors.Is(err, ErrMissingFile) || !strings.Contains(err.Error(), "tokenizer.json") {
			t.Errorf("Unmarshal with %+v: %v; want ErrMissingFile naming tokenizer.json", rc, err)
		}
		card := engineCard(t)
		if _, err := card.Marshal(); err != nil {
			t.Fatal(err)
		}
		card.RuntimeConfig = rc
		if _, err := card.Marshal(); !errors.Is(err, ErrMissingFile) {
			t.Errorf("Marshal with %+v: %v; want ErrMissingFile", rc, err)
		}
		if err := card.Verify(); !errors.Is(err, ErrMissingFile) {
			t.Errorf("Verify with %+v: %v; want ErrMissingFile", rc, err)
		}
		fetched := false
		err := card.Load(context.Background(), func(context.Context, *File) ([]byte, error) { fetched = true; return nil, errors.New("unreachable") })
		if !errors.Is(err, ErrMissingFile) || fetched {
			t.Errorf("Load with %+v: %v (fetched: %v); want ErrMissingFile before any fetch", rc, err, fetched)
		}
	}
	// A card from a model directory keeps needing its tokenizer.
	demo := demoCard(t)
	demo.TokenizerJSON = nil
	if _, err := demo.Marshal(); !errors.Is(err, ErrMissingFile) {
		t.Errorf("demo card without tokenizer: %v; want ErrMissingFile", err)
	}
}
