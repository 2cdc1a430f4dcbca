// Command testgguf writes a random-weight GGUF model (internal/testgguf)
// whose vocabulary, special tokens and chat template come from a Hugging
// Face model directory: a real model for llama.cpp's llama-server to load,
// whose answers are real tokens with no meaning. make demo-gguf and
// scripts/run-llamacpp.sh use it.
//
//	go run ./internal/testgguf/cmd/testgguf -from models/demo -o bin/demo.gguf
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/dynamo-go/dynamo/internal/testgguf"
)

func main() {
	from := flag.String("from", "", "a Hugging Face model directory with tokenizer.json (and tokenizer_config.json) (required)")
	out := flag.String("o", "", "the GGUF file to write (required)")
	arch := flag.String("arch", "qwen3", "architecture: qwen3 or llama")
	name := flag.String("name", "", "general.name (default: testgguf-ARCH)")
	layers := flag.Int("layers", 0, "transformer layers (default 2)")
	hidden := flag.Int("hidden", 0, "embedding width (default 64)")
	ffn := flag.Int("ffn", 0, "feed-forward width (default 128)")
	heads := flag.Int("heads", 0, "attention heads (default 4)")
	kvHeads := flag.Int("kv-heads", 0, "key/value heads (default 2)")
	headDim := flag.Int("head-dim", 0, "width of a head (default 16)")
	seed := flag.Int64("seed", 0, "seed of the weights")
	flag.Parse()
	if *from == "" || *out == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: testgguf -from DIR -o FILE.gguf [flags]")
		flag.PrintDefaults()
		os.Exit(2)
	}
	opts, err := testgguf.FromDir(*from)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testgguf:", err)
		os.Exit(1)
	}
	opts.Arch, opts.Name, opts.Seed = *arch, *name, *seed
	opts.Layers, opts.Hidden, opts.FFN, opts.Heads, opts.KVHeads, opts.HeadDim = *layers, *hidden, *ffn, *heads, *kvHeads, *headDim
	start := time.Now()
	if err := testgguf.Write(*out, opts); err != nil {
		fmt.Fprintln(os.Stderr, "testgguf:", err)
		os.Exit(1)
	}
	fi, err := os.Stat(*out)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testgguf:", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "testgguf: wrote %s (%.1f MB) in %s\n", *out, float64(fi.Size())/1e6, time.Since(start).Round(time.Millisecond))
}
