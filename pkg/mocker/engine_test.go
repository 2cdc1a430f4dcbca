package mocker

import (
	"context"
	"errors"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/dynamo-go/dynamo/pkg/backend"
)

func TestGenerateLengthWithUsage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, _ := startEngine(t, nil)
		defer stopEngine(t, e)
		var c collector
		start := time.Now()
		if err := e.Generate(t.Context(), request(prompt(0, 100), 10, 1), c.emit); err != nil {
			t.Fatal(err)
		}
		fin := c.terminal(t)
		if fin.FinishReason.Kind != backend.FinishLength || len(fin.TokenIDs) != 0 {
			t.Errorf("terminal %+v", fin)
		}
		want := &backend.Usage{PromptTokens: 100, CompletionTokens: 10, TotalTokens: 110,
			PromptTokensDetails: &backend.PromptDetail{CachedTokens: 0}}
		if diff := cmp.Diff(want, fin.CompletionUsage); diff != "" {
			t.Errorf("usage (-want +got):\n%s", diff)
		}
		if n := len(c.tokens()); n != 10 {
			t.Errorf("%d tokens, want 10", n)
		}
		// One prefill pass (which yields the first token) and nine decode passes.
		idle := decodeTime(2*64, 16384*64)
		if got, want := time.Since(start), prefillTime(100)+10*idle; got < want-time.Millisecond || got > want+time.Millisecond {
			t.Errorf("took %v, want about %v", got, want)
		}
		if n := activeBlocks(e, 0); n != 0 || !e.IsQuiescent() {
			t.Errorf("after the request: %d active blocks, quiescent %v", n, e.IsQuiescent())
		}
	})
}

// A consumer that falls behind gets the tokens produced meanwhile in one
// output (vLLM's output collector does the same); the tokens are those of
// a consumer that keeps up, and a request with logprobs still gets one
// output per token.
func TestGenerateMergesTokensForALateConsumer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, _ := startEngine(t, nil)
		defer stopEngine(t, e)
		prompt0 := prompt(0, 100)
		var quick collector
		if err := e.Generate(t.Context(), request(prompt0, 12, 7), quick.emit); err != nil {
			t.Fatal(err)
		}
		late := collector{onToken: func(n int) error {
			if n == 1 {
				time.Sleep(time.Second) // many decode steps
			}
			return nil
		}}
		if err := e.Generate(t.Context(), request(prompt0, 12, 7), late.emit); err != nil {
			t.Fatal(err)
		}
		fin := late.terminal(t)
		if !slices.Equal(late.tokens(), quick.tokens()) || len(late.tokens()) != 12 {
			t.Fatalf("late consumer's tokens %v, want %v", late.tokens(), quick.tokens())
		}
		if fin.FinishReason.Kind != backend.FinishLength || fin.CompletionUsage.CompletionTokens != 12 {
			t.Errorf("terminal %+v", fin)
		}
		// The first token, the other eleven, the terminal output.
		if len(late.outs) != 3 || len(late.outs[1].TokenIDs) != 11 || len(fin.TokenIDs) != 0 {
			t.Errorf("late consumer got %d outputs, want 3: one token, eleven, the terminal", len(late.outs))
		}

		req := request(prompt0, 12, 7)
		req.OutputOptions.Logprobs = backend.Ptr(uint32(1))
		withLP := collector{onToken: late.onToken}
		if err := e.Generate(t.Context(), req, withLP.emit); err != nil {
			t.Fatal(err)
		}
		withLP.terminal(t)
		if len(withLP.outs) != 13 || !slices.Equal(withLP.tokens(), quick.tokens()) {
			t.Errorf("with logprobs: %d outputs, tokens %v; want 13 (one per token, then the terminal), %v",
				len(withLP.outs), withLP.tokens(), quick.tokens())
		}
	})
	synctest.Test(t, func(t *testing.T) {
		e, _ := startEngine(t, func(c *Config) { c.OutputPerToken = true })
		defer stopEngine(t, e)
		late := collector{onToken: func(n int) error {
			if n == 1 {
				time.Sleep(time.Second)
			}
			return nil
		}}
		if err := e.Generate(t.Context(), request(prompt(0, 100), 12, 7), late.emit); err != nil {
			t.Fatal(err)
		}
		late.terminal(t)
		if len(late.outs) != 13 {
			t.Errorf("OutputPerToken: %d outputs, want 13 (one per token, then the terminal)", len(late.outs))
		}
	})
}

func TestGenerateDefaultMaxTokensAndEOS(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, _ := startEngine(t, func(c *Config) { c.ContextLength = 50 })
		defer stopEngine(t, e)
		var c collector
		if err := e.Generate(t.Context(), request(prompt(0, 40), -1, 1), c.emit); err != nil {
			t.Fatal(err)
		}
		if n := len(c.tokens()); n != 10 || c.terminal(t).FinishReason.Kind != backend.FinishLength {
			t.Errorf("%d tokens, finish %v; want 10, length", n, c.terminal(t).FinishReason)
		}

		req := request(prompt(0, 40), 10, 5)
		req.EOSTokenIDs = []uint32{DeterministicToken(5, 43)}
		c = collector{}
		if err := e.Generate(t.Context(), req, c.emit); err != nil {
			t.Fatal(err)
		}
		if n := len(c.tokens()); n != 4 || c.terminal(t).FinishReason.Kind != backend.FinishEOS {
			t.Errorf("%d tokens, finish %v; want 4, eos", n, c.terminal(t).FinishReason)
		}
		req.StopConditions.IgnoreEOS = backend.Ptr(true)
		c = collector{}
		if err := e.Generate(t.Context(), req, c.emit); err != nil {
			t.Fatal(err)
		}
		if n := len(c.tokens()); n != 10 {
			t.Errorf("ignore_eos: %d tokens, want 10", n)
		}
	})
}

func TestGenerateRejects(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, _ := startEngine(t, func(c *Config) { c.ContextLength, c.NumGPUBlocks, c.BlockSize = 1000, 10, 16 })
		defer stopEngine(t, e)
		outOfRange := request(prompt(0, 10), 5, 0)
		outOfRange.Routing = &backend.Routing{DPRank: backend.Ptr(uint32(1))}
		for name, req := range map[string]*backend.Request{
			"empty":      request(nil, 5, 0),
			"too long":   request(prompt(0, 1001), 5, 0),
			"too big":    request(prompt(0, 100), 500, 0),
			"dp rank":    outOfRange,
			"prompt big": request(prompt(0, 161), 1, 0),
		} {
			var c collector
			if err := e.Generate(t.Context(), req, c.emit); !errors.Is(err, backend.ErrInvalidArgument) || len(c.outs) != 0 {
				t.Errorf("%s: err %v after %d outputs, want InvalidArgument before any", name, err, len(c.outs))
			}
		}
		// Without max_tokens, a request may grow until the cache is full.
		var c collector
		if err := e.Generate(t.Context(), request(prompt(0, 100), -1, 0), c.emit); err != nil || len(c.tokens()) != 60 {
			t.Errorf("default max_tokens: %v, %d tokens; want 60", err, len(c.tokens()))
		}
	})
}

func TestGenerateNeedsRunningEngine(t *testing.T) {
	e := testEngine(t, nil)
	var c collector
	if err := e.Generate(t.Context(), request(prompt(0, 4), 1, 0), c.emit); !errors.Is(err, backend.ErrEngineShutdown) {
		t.Errorf("before Start: %v", err)
	}
	synctest.Test(t, func(t *testing.T) {
		e, _ := startEngine(t, nil)
		stopEngine(t, e)
		if err := e.Generate(t.Context(), request(prompt(0, 4), 1, 0), c.emit); !errors.Is(err, backend.ErrEngineShutdown) {
			t.Errorf("after Cleanup: %v", err)
		}
		if _, err := e.Start(t.Context(), 1); !errors.Is(err, ErrAlreadyStarted) {
			t.Errorf("Start again: %v", err)
		}
	})
}

func TestDeterministicContinuation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, _ := startEngine(t, nil)
		defer stopEngine(t, e)
		const n, k, seed = 20, 7, 42
		p := prompt(3, 70)
		var whole collector
		if err := e.Generate(t.Context(), request(p, n, seed), whole.emit); err != nil {
			t.Fatal(err)
		}
		all := whole.tokens()
		for i, tok := range all {
			if want := DeterministicToken(seed, len(p)+i); tok != want {
				t.Fatalf("token %d = %d, want %d", i, tok, want)
			}
		}
		var rest collector
		cont := request(append(slices.Clone(p), all[:k]...), n-k, seed)
		if err := e.Generate(t.Context(), cont, rest.emit); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(all[k:], rest.tokens()); diff != "" {
			t.Errorf("continuation differs (-want +got):\n%s", diff)
		}
		var other collector
		if err := e.Generate(t.Context(), request(p, n, seed+1), other.emit); err != nil {
			t.Fatal(err)
		}
		if slices.Equal(all, other.tokens()) {
			t.Error("another seed gave the same tokens")
		}
	})
}

func TestRandomTokensInRange(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, _ := startEngine(t, func(c *Config) { c.Deterministic = false })
		defer stopEngine(t, e)
		var c collector
		if err := e.Generate(t.Context(), request(prompt(0, 10), 200, 0), c.emit); err != nil {
			t.Fatal(err)
		}
		seen := map[uint32]bool{}
		for _, tok := range c.tokens() {
			if tok < 1000 || tok >= 2000 {
				t.Fatalf("token %d out of [1000, 2000)", tok)
			}
			seen[tok] = true
		}
		if len(seen) < 100 {
			t.Errorf("only %d distinct tokens in 200", len(seen))
		}
	})
}

func TestConcurrentRequestsAcrossRanks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, _ := startEngine(t, func(c *Config) { c.DPSize = 2; c.MaxNumSeqs = 4 })
		defer stopEngine(t, e)
		if got := e.KVEventSources(); !slices.Equal(got, []int{0, 1}) {
			t.Errorf("KVEventSources = %v", got)
		}
		errs := make(chan error, 16)
		counts := make([]int, 16)
		for i := range 16 {
			go func() {
				var c collector
				err := e.Generate(context.Background(), request(prompt(i*1000, 50+i), 30, int64(i)), c.emit)
				counts[i] = len(c.tokens())
				errs <- err
			}()
		}
		for range 16 {
			if err := <-errs; err != nil {
				t.Error(err)
			}
		}
		for i, n := range counts {
			if n != 30 {
				t.Errorf("request %d: %d tokens", i, n)
			}
		}
		if activeBlocks(e, 0)+activeBlocks(e, 1) != 0 || !e.IsQuiescent() {
			t.Error("blocks left after all requests")
		}
	})
}
