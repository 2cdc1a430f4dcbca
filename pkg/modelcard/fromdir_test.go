package modelcard

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func u32(v uint32) *uint32 { return &v }

func TestFromDirDemo(t *testing.T) {
	c, err := FromDir(demoDir, Options{Name: "demo", Aliases: []string{"demo-chat"}, MigrationLimit: 3})
	if err != nil {
		t.Fatal(err)
	}
	if c.DisplayName != "demo" || c.Slug != "demo" {
		t.Errorf("name %q slug %q", c.DisplayName, c.Slug)
	}
	if diff := cmp.Diff([]string{"demo", "demo-chat"}, c.Names()); diff != "" {
		t.Errorf("Names (-want +got):\n%s", diff)
	}
	if c.ContextLength != 4096 || c.KVCacheBlockSize != DefaultBlockSize || c.MigrationLimit != 3 {
		t.Errorf("context %d block %d migration %d", c.ContextLength, c.KVCacheBlockSize, c.MigrationLimit)
	}
	if c.ModelType != ModelChat|ModelCompletions || c.ModelInput != InputTokens || c.WorkerType != WorkerAggregated {
		t.Errorf("type %v input %v worker %v", c.ModelType, c.ModelInput, c.WorkerType)
	}
	if diff := cmp.Diff(GenConfig{EOSTokenIDs: []uint32{511, 508}, BOSTokenID: u32(509)}, c.GenConfig); diff != "" {
		t.Errorf("GenConfig (-want +got):\n%s", diff)
	}
	want := SpecialTokens{BOS: "<|begin_of_text|>", EOS: "<|im_end|>", PAD: "<|endoftext|>"}
	if c.SpecialTokens != want {
		t.Errorf("special tokens %+v, want %+v", c.SpecialTokens, want)
	}
	if c.ChatTemplate == nil || c.ChatTemplate.Source != TemplateTokenizerConfig || !strings.Contains(c.ChatTemplate.Template, "<|im_start|>") {
		t.Fatalf("chat template %+v", c.ChatTemplate)
	}
	for _, f := range []*File{c.TokenizerJSON, c.TokenizerConfigJSON, c.ConfigJSON, c.GenerationConfigJSON} {
		if f == nil || f.Verify() != nil || !strings.HasPrefix(f.Checksum, "sha256:") {
			t.Errorf("file %+v", f)
		}
	}
}

func TestFromDirShared(t *testing.T) {
	for _, tc := range []struct {
		model      string
		source     string
		context    uint32
		eos        []uint32
		template   string
		modelTypes ModelType
	}{
		{"qwen2.5-instruct", TemplateTokenizerConfig, 131072, []uint32{151645}, "<|im_start|>", ModelChat | ModelCompletions},
		{"qwen2-1.5b-instruct-boundless", TemplateTokenizerConfig, 32768, []uint32{151645, 151643}, "<|im_start|>", ModelChat | ModelCompletions},
		{"llama-3-8b-instruct", TemplateTokenizerConfig, 0, []uint32{128009}, "<|start_header_id|>", ModelChat | ModelCompletions},
		{"phi-2", "", 2048, []uint32{50256}, "", ModelCompletions},
	} {
		t.Run(tc.model, func(t *testing.T) {
			if testing.Short() {
				t.Skip("large tokenizer files; skipped with -short")
			}
			dir := sharedModel(t, tc.model)
			c, err := FromDir(dir, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if c.DisplayName != tc.model {
				t.Errorf("display name %q, want the directory name", c.DisplayName)
			}
			if c.ContextLength != tc.context {
				t.Errorf("context length %d, want %d", c.ContextLength, tc.context)
			}
			if diff := cmp.Diff(tc.eos, c.GenConfig.EOSTokenIDs); diff != "" {
				t.Errorf("eos ids (-want +got):\n%s", diff)
			}
			if c.ModelType != tc.modelTypes {
				t.Errorf("model type %v, want %v", c.ModelType, tc.modelTypes)
			}
			if tc.source == "" {
				if c.ChatTemplate != nil {
					t.Errorf("unexpected chat template from %s", c.ChatTemplate.Source)
				}
			} else if c.ChatTemplate == nil || c.ChatTemplate.Source != tc.source || !strings.Contains(c.ChatTemplate.Template, tc.template) {
				t.Errorf("chat template %+v", c.ChatTemplate)
			}
			b, err := c.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			back, err := Unmarshal(b)
			if err != nil {
				t.Fatal(err)
			}
			if len(b) > 1<<20 {
				t.Errorf("card is %d bytes; a stock etcd takes values up to 1 MiB", len(b))
			}
			if back.Loaded() {
				t.Error("a decoded card is loaded; its files should travel out of band")
			}
			byChecksum := map[string][]byte{}
			for _, f := range c.Files() {
				byChecksum[f.Checksum] = f.Bytes()
			}
			err = back.Load(t.Context(), func(_ context.Context, f *File) ([]byte, error) { return byChecksum[f.Checksum], nil })
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(back.TokenizerJSON.Bytes(), c.TokenizerJSON.Bytes()) {
				t.Error("tokenizer.json changed in the round trip")
			}
			if (c.ChatTemplate == nil) != (back.ChatTemplate == nil) ||
				c.ChatTemplate != nil && c.ChatTemplate.Select(false) != back.ChatTemplate.Select(false) {
				t.Error("the chat template changed in the round trip")
			}
			t.Logf("card size %d bytes (files %d bytes)", len(b), c.Size())
		})
	}
}

func TestFromDirGemmaHasNoTokenizer(t *testing.T) {
	dir := sharedModel(t, "gemma-it")
	_, err := FromDir(dir, Options{})
	if !errors.Is(err, ErrMissingFile) || !strings.Contains(err.Error(), "tokenizer.json") {
		t.Fatalf("err = %v, want ErrMissingFile naming tokenizer.json", err)
	}
}

func TestFromDirMissingTokenizer(t *testing.T) {
	dir := writeModel(t, map[string]string{"config.json": `{"max_position_embeddings": 8}`})
	_, err := FromDir(dir, Options{})
	if !errors.Is(err, ErrMissingFile) || !strings.Contains(err.Error(), "tokenizer.json") {
		t.Fatalf("err = %v, want ErrMissingFile naming tokenizer.json", err)
	}
	if _, err := FromDir(dir+"/nope", Options{}); err == nil {
		t.Fatal("FromDir on a missing directory succeeded")
	}
}

func TestEOSMerge(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  GenConfig
	}{
		{"generation int", map[string]string{
			"generation_config.json": `{"eos_token_id": 2, "bos_token_id": 6}`,
			"tokenizer_config.json":  `{"eos_token": "<eos>"}`,
		}, GenConfig{EOSTokenIDs: []uint32{2, 5}, BOSTokenID: u32(6)}},
		{"generation list and config", map[string]string{
			"generation_config.json": `{"eos_token_id": [2, 1]}`,
			"config.json":            `{"eos_token_id": 1}`,
			"tokenizer_config.json":  `{"eos_token": {"content": "<eos>", "lstrip": false}, "bos_token": "<bos>"}`,
		}, GenConfig{EOSTokenIDs: []uint32{2, 1, 5}, BOSTokenID: u32(6)}},
		{"tokenizer only, token in model vocab", map[string]string{
			"tokenizer_config.json": `{"eos_token": "</s>"}`,
		}, GenConfig{EOSTokenIDs: []uint32{2}}},
		{"config list, null generation", map[string]string{
			"config.json":            `{"eos_token_id": [5, 2]}`,
			"generation_config.json": `{"eos_token_id": null}`,
		}, GenConfig{EOSTokenIDs: []uint32{5, 2}}},
		{"none", map[string]string{}, GenConfig{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.files["tokenizer.json"] = tinyTokenizer
			c, err := FromDir(writeModel(t, tc.files), Options{})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, c.GenConfig); diff != "" {
				t.Errorf("GenConfig (-want +got):\n%s", diff)
			}
		})
	}
}

func TestChatTemplateResolution(t *testing.T) {
	list := `{"chat_template": [{"name": "default", "template": "D"}, {"name": "tool_use", "template": "T"}, {"name": "rag", "template": "R"}]}`
	for _, tc := range []struct {
		name    string
		files   map[string]string
		want    *ChatTemplate
		wantErr error
	}{
		{"jinja wins", map[string]string{
			"chat_template.jinja":   "J",
			"chat_template.json":    `{"chat_template": "C"}`,
			"tokenizer_config.json": `{"chat_template": "S"}`,
		}, &ChatTemplate{Source: TemplateJinja, Template: "J"}, nil},
		{"json before tokenizer config", map[string]string{
			"chat_template.json":    `{"chat_template": "C"}`,
			"tokenizer_config.json": `{"chat_template": "S"}`,
		}, &ChatTemplate{Source: TemplateJSON, Template: "C"}, nil},
		{"string", map[string]string{"tokenizer_config.json": `{"chat_template": "S"}`},
			&ChatTemplate{Source: TemplateTokenizerConfig, Template: "S"}, nil},
		{"named list kept", map[string]string{"tokenizer_config.json": list},
			&ChatTemplate{Source: TemplateTokenizerConfig, Templates: []NamedTemplate{{"default", "D"}, {"tool_use", "T"}, {"rag", "R"}}}, nil},
		{"none", map[string]string{"tokenizer_config.json": `{}`}, nil, nil},
		{"unusable list", map[string]string{"tokenizer_config.json": `{"chat_template": [{"name": "x"}]}`}, nil, ErrInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.files["tokenizer.json"] = tinyTokenizer
			c, err := FromDir(writeModel(t, tc.files), Options{})
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err = %v, want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, c.ChatTemplate, cmpopts.IgnoreFields(ChatTemplate{}, "File")); diff != "" {
				t.Errorf("ChatTemplate (-want +got):\n%s", diff)
			}
			if tc.want != nil {
				wantFile := map[string]string{TemplateJinja: FileChatTemplate, TemplateJSON: FileChatTemplateJSON}[tc.want.Source]
				if got := c.ChatTemplate.fileName(); wantFile != "" && got != wantFile {
					t.Errorf("template file %q, want %q", got, wantFile)
				}
				if wantFile == "" && c.ChatTemplate.File != nil {
					t.Errorf("template from tokenizer_config.json has its own file %q", c.ChatTemplate.File.Path)
				}
				back := roundTrip(t, c)
				if diff := cmp.Diff(c.ChatTemplate, back.ChatTemplate, cmpopts.IgnoreFields(ChatTemplate{}, "File")); diff != "" {
					t.Errorf("template after publish and load (-want +got):\n%s", diff)
				}
			}
			wantType := ModelCompletions
			if tc.want != nil {
				wantType |= ModelChat
			}
			if c.ModelType != wantType {
				t.Errorf("model type %v, want %v", c.ModelType, wantType)
			}
		})
	}
}

func TestNamedTemplates(t *testing.T) {
	single := &ChatTemplate{Template: "S"}
	if diff := cmp.Diff(map[string]string{"default": "S", "tool_use": "S"}, single.Named()); diff != "" {
		t.Error(diff)
	}
	list := &ChatTemplate{Templates: []NamedTemplate{{"default", "D"}, {"tool_use", "T"}}}
	if got := list.Select(true); got != "T" {
		t.Errorf("Select(tools) = %q", got)
	}
	if got := list.Select(false); got != "D" {
		t.Errorf("Select(no tools) = %q", got)
	}
	noTool := &ChatTemplate{Templates: []NamedTemplate{{"default", "D"}}}
	if got := noTool.Select(true); got != "D" {
		t.Errorf("Select(tools) without tool_use = %q", got)
	}
	var none *ChatTemplate
	if got := none.Select(false); got != "" {
		t.Errorf("nil Select = %q", got)
	}
}

func TestFromDirOptions(t *testing.T) {
	custom := writeModel(t, map[string]string{"custom.jinja": "CUSTOM"})
	dir := writeModel(t, map[string]string{
		"tokenizer.json":        tinyTokenizer,
		"tokenizer_config.json": `{"chat_template": "S", "model_max_length": 1e30}`,
		"config.json":           `{"text_config": {"max_position_embeddings": 8192}}`,
	})
	c, err := FromDir(dir, Options{
		Source: "Org/Some.Model", ContextLength: 0, KVCacheBlockSize: 64,
		ModelTypes: []string{"completions"}, DisaggregationMode: "decode", ChatTemplateFile: custom + "/custom.jinja",
		Runtime: RuntimeConfig{TotalKVBlocks: 1000, MaxNumSeqs: 256},
	})
	if err != nil {
		t.Fatal(err)
	}
	if c.DisplayName != "Org/Some.Model" || c.Slug != "org_some_model" || c.SourcePath != "Org/Some.Model" {
		t.Errorf("name %q slug %q source %q", c.DisplayName, c.Slug, c.SourcePath)
	}
	if c.ContextLength != 8192 || c.KVCacheBlockSize != 64 || c.ModelType != ModelCompletions || c.WorkerType != WorkerDecode {
		t.Errorf("card %+v", c)
	}
	if c.ChatTemplate == nil || c.ChatTemplate.Source != TemplateCustom || c.ChatTemplate.Template != "CUSTOM" {
		t.Errorf("chat template %+v", c.ChatTemplate)
	}
	if c.RuntimeConfig.TotalKVBlocks != 1000 || c.RuntimeConfig.MaxNumSeqs != 256 {
		t.Errorf("runtime config %+v", c.RuntimeConfig)
	}
	for _, bad := range []Options{
		{MigrationLimit: -1}, {ContextLength: -5}, {DisaggregationMode: "both"}, {ModelTypes: []string{"chat", "sing"}},
	} {
		if _, err := FromDir(dir, bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("FromDir(%+v) = %v, want ErrInvalid", bad, err)
		}
	}
	// model_max_length 1e30 means "no limit": not a context length.
	dir2 := writeModel(t, map[string]string{"tokenizer.json": tinyTokenizer, "tokenizer_config.json": `{"model_max_length": 1e30}`})
	if c, err := FromDir(dir2, Options{}); err != nil || c.ContextLength != 0 {
		t.Errorf("context length %v, %v; want 0", c, err)
	}
}

// roundTrip publishes c (Marshal), decodes it as a frontend does, and loads
// its files from c by checksum.
func roundTrip(t *testing.T, c *Card) *Card {
	t.Helper()
	b, err := c.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	back, err := Unmarshal(b)
	if err != nil {
		t.Fatal(err)
	}
	byChecksum := map[string][]byte{}
	for _, f := range c.Files() {
		byChecksum[f.Checksum] = f.Bytes()
	}
	if err := back.Load(t.Context(), func(_ context.Context, f *File) ([]byte, error) { return byChecksum[f.Checksum], nil }); err != nil {
		t.Fatal(err)
	}
	return back
}
