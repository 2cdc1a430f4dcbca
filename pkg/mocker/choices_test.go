package mocker

import (
	"errors"
	"slices"
	"testing"
	"testing/synctest"

	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/runtime"
)

// byChoice splits a stream of outputs by choice index: each choice's
// token ids and its terminal output. It fails the test if an output of
// an n > 1 stream lacks its index.
func byChoice(t *testing.T, outs []*backend.Output, n int) ([][]uint32, []*backend.Output) {
	t.Helper()
	toks, fins := make([][]uint32, n), make([]*backend.Output, n)
	for _, o := range outs {
		if o.Index == nil || int(*o.Index) >= n {
			t.Fatalf("output %+v: want a choice index in [0, %d)", o, n)
		}
		i := *o.Index
		if fins[i] != nil {
			t.Fatalf("choice %d: output %+v after its terminal", i, o)
		}
		toks[i] = append(toks[i], o.TokenIDs...)
		if o.IsTerminal() {
			fins[i] = o
		}
	}
	for i, f := range fins {
		if f == nil {
			t.Fatalf("choice %d has no terminal output", i)
		}
	}
	return toks, fins
}

// generateChecked runs req through e with the stream validator expecting
// req's choices.
func generateChecked(t *testing.T, e *Engine, rc *runtime.Context, req *backend.Request, c *collector) error {
	t.Helper()
	checked, done := backend.ValidateStream(c.emit, backend.ValidateStop(rc), backend.ValidateChoices(req), backend.ValidatePanic(false))
	err := done(e.Generate(rc, req, checked))
	if errors.Is(err, backend.ErrContractViolation) {
		t.Fatal(err)
	}
	return err
}

// With n=3 a deterministic engine answers three distinct sequences, each
// a pure function of (seed, choice, position) and choice 0 the n=1
// answer; each choice ends on its own (choice 1 at its EOS, the others at
// max_tokens) with usage counting its tokens; the choices share the
// prompt's full blocks.
func TestGenerateNChoices(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, _ := startEngine(t, nil)
		defer stopEngine(t, e)
		rc := runtime.NewContext(t.Context(), "req-n")
		defer rc.Release()
		const seed, maxTokens, promptLen = 7, 10, 100

		var one collector
		if err := generateChecked(t, e, rc, request(prompt(0, promptLen), maxTokens, seed), &one); err != nil {
			t.Fatal(err)
		}
		for _, o := range one.outs {
			if o.Index != nil {
				t.Fatalf("n absent: output %+v carries an index", o)
			}
		}

		req := request(prompt(0, promptLen), maxTokens, seed)
		req.SamplingOptions.N = backend.Ptr(3)
		eos := DeterministicToken(ChoiceSeed(seed, 1), promptLen+3) // choice 1's 4th token
		req.EOSTokenIDs = []uint32{eos}
		blocksSeen := 0
		var c collector
		c.onToken = func(int) error {
			blocksSeen = max(blocksSeen, activeBlocks(e, 0))
			return nil
		}
		if err := generateChecked(t, e, rc, req, &c); err != nil {
			t.Fatal(err)
		}
		toks, fins := byChoice(t, c.outs, 3)

		wantLen := []int{maxTokens, 4, maxTokens}
		wantFin := []backend.FinishKind{backend.FinishLength, backend.FinishEOS, backend.FinishLength}
		for i := range 3 {
			var want []uint32
			for p := range wantLen[i] {
				want = append(want, DeterministicToken(ChoiceSeed(seed, i), promptLen+p))
			}
			if i != 1 && slices.Contains(want, eos) {
				t.Fatalf("choice %d hits the EOS id %d by chance: pick another seed", i, eos)
			}
			if !slices.Equal(toks[i], want) {
				t.Errorf("choice %d tokens %v, want %v", i, toks[i], want)
			}
			if fins[i].FinishReason.Kind != wantFin[i] {
				t.Errorf("choice %d finish %v, want %v", i, fins[i].FinishReason, wantFin[i])
			}
			u := fins[i].CompletionUsage
			if u == nil || u.PromptTokens != promptLen || u.CompletionTokens != wantLen[i] {
				t.Errorf("choice %d usage %+v, want %d prompt and %d completion tokens", i, u, promptLen, wantLen[i])
			}
		}
		if !slices.Equal(toks[0], one.tokens()) {
			t.Errorf("choice 0 %v, want the n=1 answer %v", toks[0], one.tokens())
		}
		if slices.Equal(toks[0], toks[2]) || slices.Equal(toks[0][:4], toks[1]) {
			t.Errorf("choices are not distinct: %v", toks)
		}
		// 100 prompt tokens in blocks of 64: one full block, shared, and a
		// partial block per choice.
		if blocksSeen != 4 {
			t.Errorf("%d blocks active while three choices ran, want 4 (the prompt's full block shared)", blocksSeen)
		}
		if n := activeBlocks(e, 0); n != 0 || !e.IsQuiescent() {
			t.Errorf("after the request: %d active blocks, quiescent %v", n, e.IsQuiescent())
		}
	})
}

// Each choice is a running sequence counted against MaxNumSeqs: with a
// budget of two, the third choice of an n=3 request waits for a slot and
// still gets its full answer.
func TestGenerateNChoicesCountAgainstMaxNumSeqs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, _ := startEngine(t, func(c *Config) { c.MaxNumSeqs = 2 })
		defer stopEngine(t, e)
		rc := runtime.NewContext(t.Context(), "req-seqs")
		defer rc.Release()
		req := request(prompt(0, 30), 5, 3)
		req.SamplingOptions.N = backend.Ptr(3)
		running, waited := 0, false
		c := collector{onToken: func(int) error {
			r := e.ranks[0]
			r.mu.Lock()
			running = max(running, len(r.prefill)+len(r.decode))
			waited = waited || len(r.waiting) > 0
			r.mu.Unlock()
			return nil
		}}
		if err := generateChecked(t, e, rc, req, &c); err != nil {
			t.Fatal(err)
		}
		toks, fins := byChoice(t, c.outs, 3)
		for i := range 3 {
			if len(toks[i]) != 5 || fins[i].FinishReason.Kind != backend.FinishLength {
				t.Errorf("choice %d: %d tokens, finish %v; want 5, length", i, len(toks[i]), fins[i].FinishReason)
			}
		}
		if running > 2 || !waited {
			t.Errorf("at most %d sequences ran (want 2), a choice waited: %v", running, waited)
		}
	})
}

// A stop ends every choice still running with its own cancelled terminal,
// whose usage counts that choice's tokens.
func TestStopEndsEveryChoice(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, _ := startEngine(t, nil)
		defer stopEngine(t, e)
		rc := runtime.NewContext(t.Context(), "req-stop")
		defer rc.Release()
		req := request(prompt(0, 50), 1000, 0)
		req.SamplingOptions.N = backend.Ptr(2)
		c := collector{onToken: func(n int) error {
			if n == 3 {
				rc.Stop()
			}
			return nil
		}}
		if err := generateChecked(t, e, rc, req, &c); err != nil {
			t.Fatal(err)
		}
		toks, fins := byChoice(t, c.outs, 2)
		for i := range 2 {
			if fins[i].FinishReason.Kind != backend.FinishCancelled || fins[i].CompletionUsage.CompletionTokens != len(toks[i]) {
				t.Errorf("choice %d: finish %v usage %+v after %d tokens; want cancelled counting them", i, fins[i].FinishReason, fins[i].CompletionUsage, len(toks[i]))
			}
		}
		if n := activeBlocks(e, 0); n != 0 {
			t.Errorf("%d blocks still active", n)
		}
	})
}

// n out of 1..MaxChoices is an invalid argument; max_tokens 0 ends every
// choice at once.
func TestGenerateNLimits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, _ := startEngine(t, nil)
		defer stopEngine(t, e)
		for _, n := range []int{0, MaxChoices + 1} {
			req := request(prompt(0, 10), 5, 0)
			req.SamplingOptions.N = backend.Ptr(n)
			if err := e.Generate(t.Context(), req, (&collector{}).emit); !errors.Is(err, backend.ErrInvalidArgument) {
				t.Errorf("n=%d: %v, want ErrInvalidArgument", n, err)
			}
		}
		rc := runtime.NewContext(t.Context(), "req-zero")
		defer rc.Release()
		req := request(prompt(0, 10), 0, 0)
		req.SamplingOptions.N = backend.Ptr(3)
		var c collector
		if err := generateChecked(t, e, rc, req, &c); err != nil {
			t.Fatal(err)
		}
		if _, fins := byChoice(t, c.outs, 3); fins[2].FinishReason.Kind != backend.FinishLength {
			t.Errorf("max_tokens 0: %v", fins[2].FinishReason)
		}
	})
}

// Logprobs come per choice: every token of every choice carries its own,
// headed by the token, and choice 0's are the n=1 request's.
func TestLogprobsPerChoice(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, _ := startEngine(t, nil)
		defer stopEngine(t, e)
		req := request(prompt(0, 20), 4, 9)
		req.OutputOptions.Logprobs = backend.Ptr(uint32(2))
		var one collector
		if err := e.Generate(t.Context(), req, one.emit); err != nil {
			t.Fatal(err)
		}
		req.SamplingOptions.N = backend.Ptr(2)
		var c collector
		if err := e.Generate(t.Context(), req, c.emit); err != nil {
			t.Fatal(err)
		}
		var lp [2][]float64
		for _, o := range c.outs {
			if o.IsTerminal() {
				continue
			}
			if len(o.LogProbs) != 1 || len(o.TopLogprobs) == 0 {
				t.Fatalf("choice %d output %+v lacks logprobs", *o.Index, o)
			}
			lp[*o.Index] = append(lp[*o.Index], o.LogProbs[0])
		}
		var want []float64
		for _, o := range one.outs[:len(one.outs)-1] {
			want = append(want, o.LogProbs[0])
		}
		if !slices.Equal(lp[0], want) || slices.Equal(lp[1], want) {
			t.Errorf("choice logprobs %v, n=1 %v: want choice 0 alone to match", lp, want)
		}
	})
}
