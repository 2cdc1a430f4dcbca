package main

import (
	"flag"
	"io"
	"strings"
	"testing"

	"github.com/dynamo-go/dynamo/cmd/internal/envflag"
	"github.com/dynamo-go/dynamo/pkg/modelcard"
)

func TestProcessingFlags(t *testing.T) {
	for _, tc := range []struct {
		engine string
		args   []string
		env    map[string]string
		want   modelcard.Processing
		err    string
	}{
		{engine: "vllm", want: modelcard.Processing{}},
		{engine: "vllm", args: []string{"--native-framework-processing"}, want: modelcard.Processing{Preprocessing: "engine", Postprocessing: "engine"}},
		{engine: "vllm", args: []string{"--vllm-processing"}, want: modelcard.Processing{Preprocessing: "engine", Postprocessing: "engine"}},
		{engine: "vllm", env: map[string]string{"DYN_WORKER_VLLM_PROCESSING": "true"}, want: modelcard.Processing{Preprocessing: "engine", Postprocessing: "engine"}},
		{engine: "vllm", args: []string{"--postprocessing", "worker"}, want: modelcard.Processing{Postprocessing: "worker"}},
		{engine: "sglang", args: []string{"--postprocessing", "worker"}, want: modelcard.Processing{Postprocessing: "worker"}},
		{engine: "llamacpp", args: []string{"--vllm-processing"}, err: "--vllm-processing needs --engine vllm"},
		{engine: "vllm", args: []string{"--sglang-processing"}, err: "--sglang-processing needs --engine sglang"},
		{engine: "sglang", args: []string{"--sglang-processing"}, err: "takes text only"},
		{engine: "sglang", args: []string{"--postprocessing", "engine"}, want: modelcard.Processing{Postprocessing: "engine"}},
		{engine: "llamacpp", args: []string{"--postprocessing", "engine"}, want: modelcard.Processing{Postprocessing: "engine"}},
		{engine: "llamacpp", args: []string{"--preprocessing", "engine"}, want: modelcard.Processing{Preprocessing: "engine"}},
		{engine: "llamacpp", args: []string{"--native-framework-processing"}, want: modelcard.Processing{Preprocessing: "engine", Postprocessing: "engine"}},
		{engine: "vllm", args: []string{"--native-framework-processing", "--postprocessing", "worker"}, err: "--postprocessing worker contradicts"},
		{engine: "vllm", args: []string{"--preprocessing", "worker"}, err: `preprocessing "worker"`},
	} {
		fs := flag.NewFlagSet("worker", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		pf := registerProcessing(envflag.New(fs, func(k string) string { return tc.env[k] }))
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		got, err := pf.processing(tc.engine)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("--engine %s %v: %v, want an error mentioning %q", tc.engine, tc.args, err, tc.err)
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("--engine %s %v: %+v, %v; want %+v", tc.engine, tc.args, got, err, tc.want)
		}
	}
}
