package main

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/dynamo-go/dynamo/internal/testenv"
	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/backend/backendtest"
	"github.com/dynamo-go/dynamo/pkg/bridge"
	"github.com/dynamo-go/dynamo/pkg/mocker"
	"github.com/dynamo-go/dynamo/pkg/mocker/vllmapi"
)

// mockerVLLM serves a deterministic mocker engine with the vLLM API on
// loopback until the test ends and returns the server; mod adjusts the
// configurations.
func mockerVLLM(t *testing.T, mod func(*mocker.Config, *vllmapi.Config)) *vllmapi.Server {
	t.Helper()
	mc := mocker.DefaultConfig()
	mc.BlockSize, mc.NumGPUBlocks, mc.ContextLength = 4, 256, 2048
	mc.Deterministic, mc.SpeedupRatio = true, 10
	vc := vllmapi.Config{Host: "127.0.0.1", Model: "mock-model", ContextLength: 2048, BlockSize: 4, NumGPUBlocks: 256,
		EOSTokenIDs: []uint32{2}, KVEvents: vllmapi.KVEventsConfig{Port: -1, ReplayPort: -1}}
	if mod != nil {
		mod(&mc, &vc)
	}
	eng, err := mocker.New(mc)
	if err != nil {
		t.Fatal(err)
	}
	s, err := vllmapi.New(vc, eng)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Listen(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("vllmapi Run: %v", err)
		}
	})
	testenv.WaitFor(t, 10*time.Second, "the mocker's vLLM API to be ready", func() bool {
		resp, err := http.Get("http://" + s.HTTPAddr() + "/health")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	http.DefaultClient.CloseIdleConnections()
	return s
}

// The conformance kit passes against the bridge over the mocker's vLLM
// API server, through each of vLLM's endpoints: /inference/v1/generate
// and /v1/completions.
func TestConformanceOverTheMockerVLLMServer(t *testing.T) {
	s := mockerVLLM(t, nil)
	for _, api := range []string{bridge.VLLMAPIGenerate, bridge.VLLMAPICompletions} {
		t.Run(api, func(t *testing.T) {
			backendtest.Run(t, func(t *testing.T) backend.Engine {
				b, err := bridge.New(bridge.Config{Dialect: bridge.DialectVLLM, URL: "http://" + s.HTTPAddr(), VLLMAPI: api, StartTimeout: 10 * time.Second})
				if err != nil {
					t.Fatal(err)
				}
				return b
			})
		})
	}
}
