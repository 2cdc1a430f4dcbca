package main

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/bridge"
	"github.com/dynamo-go/dynamo/pkg/mocker"
)

// The mocker serves adapters, so its vLLM API server does too.
var _ backend.LoraEngine = (*mocker.Engine)(nil)

// The bridge's vLLM dialect loads, serves and unloads a LoRA adapter on
// the mocker's vLLM API server, through each of vLLM's endpoints.
func TestLoraOverTheMockerVLLMServer(t *testing.T) {
	s := mockerVLLM(t, nil)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "adapter_config.json"), []byte(`{"r":8,"lora_alpha":16,"peft_type":"LORA"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, api := range []string{bridge.VLLMAPIGenerate, bridge.VLLMAPICompletions} {
		t.Run(api, func(t *testing.T) {
			e, err := bridge.New(bridge.Config{Dialect: bridge.DialectVLLM, URL: "http://" + s.HTTPAddr(), VLLMAPI: api, StartTimeout: 10 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = e.Cleanup(t.Context()) }()
			if _, err := e.Start(t.Context(), 1); err != nil {
				t.Fatal(err)
			}
			name := "tuned-" + api
			if err := e.LoadLora(t.Context(), name, dir); err != nil {
				t.Fatal(err)
			}
			gen := func(lora string) ([]uint32, error) {
				req := &backend.Request{TokenIDs: []uint32{100, 101, 102, 103}, StopConditions: backend.StopConditions{MaxTokens: backend.Ptr[uint32](6)}}
				if lora != "" {
					req.Routing = &backend.Routing{LoraName: backend.Ptr(lora)}
				}
				var ids []uint32
				err := e.Generate(t.Context(), req, func(o *backend.Output) error { ids = append(ids, o.TokenIDs...); return nil })
				return ids, err
			}
			base, err := gen("")
			if err != nil {
				t.Fatal(err)
			}
			tuned, err := gen(name)
			if err != nil {
				t.Fatal(err)
			}
			if slices.Equal(base, tuned) {
				t.Errorf("the adapter's answer is the base model's: %v", base)
			}
			if err := e.UnloadLora(t.Context(), name); err != nil {
				t.Fatal(err)
			}
			if _, err := gen(name); !errors.Is(err, backend.ErrInvalidArgument) {
				t.Errorf("a request for the unloaded adapter: %v, want InvalidArgument", err)
			}
			if err := e.UnloadLora(t.Context(), name); !errors.Is(err, bridge.ErrLoraNotLoaded) {
				t.Errorf("unloading twice: %v, want ErrLoraNotLoaded", err)
			}
		})
	}
}
