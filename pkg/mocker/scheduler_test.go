package mocker

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/dynamo-go/dynamo/pkg/backend"
)

// testEngine returns an unstarted deterministic engine with mut applied
// to DefaultConfig; tests drive its ranks' step directly.
func testEngine(t *testing.T, mut func(*Config)) *Engine {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Deterministic = true
	if mut != nil {
		mut(&cfg)
	}
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// prompt returns n tokens starting at from.
func prompt(from, n int) []uint32 {
	out := make([]uint32, n)
	for i := range out {
		out[i] = uint32(from + i)
	}
	return out
}

// addSeq queues a request on rank 0 the way Generate does.
func addSeq(t *testing.T, e *Engine, tokens []uint32, maxTokens int) *sequence {
	t.Helper()
	req := &backend.Request{TokenIDs: tokens}
	req.StopConditions.MaxTokens = backend.Ptr(uint32(maxTokens))
	n, _, err := e.validate(req)
	if err != nil {
		t.Fatal(err)
	}
	s := e.newSequence(req, n)
	e.ranks[0].submit(s)
	return s
}

// step runs one pass of r and delivers its outputs.
func step(r *rank) time.Duration {
	d := r.step()
	deliver(r.takeOutputs())
	return d
}

// drain returns the tokens and finish reason a sequence has produced.
func drain(s *sequence) ([]uint32, backend.FinishKind) {
	toks, fin, _ := s.out.take(nil)
	return toks, fin
}

func TestSchedulerBudgets(t *testing.T) {
	tests := []struct {
		name    string
		chunked bool
		seqs    int
	}{
		{"chunked", true, 3},
		{"unchunked", false, 3},
		{"one seq", true, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := testEngine(t, func(c *Config) {
				c.BlockSize, c.MaxNumBatchedTokens, c.MaxNumSeqs, c.EnableChunkedPrefill = 4, 100, tc.seqs, tc.chunked
			})
			r := e.ranks[0]
			var seqs []*sequence
			for i := range 8 {
				seqs = append(seqs, addSeq(t, e, prompt(1000*i, 60), 5))
			}
			for pass := 0; r.hasWork(); pass++ {
				if pass > 200 {
					t.Fatal("requests did not complete")
				}
				step(r)
				if r.last.prefillTokens > 100 {
					t.Errorf("pass %d prefilled %d tokens, budget 100", pass, r.last.prefillTokens)
				}
				if n := len(r.prefill) + len(r.decode); n > tc.seqs {
					t.Errorf("pass %d runs %d sequences, max %d", pass, n, tc.seqs)
				}
			}
			for i, s := range seqs {
				if toks, fin := drain(s); len(toks) != 5 || fin != backend.FinishLength {
					t.Errorf("seq %d: %d tokens, finish %q", i, len(toks), fin)
				}
			}
			if r.kv.activeBlocks() != 0 {
				t.Errorf("%d blocks still active", r.kv.activeBlocks())
			}
		})
	}
}

func TestSchedulerChunkedPrefill(t *testing.T) {
	e := testEngine(t, func(c *Config) { c.BlockSize, c.MaxNumBatchedTokens = 16, 100 })
	r := e.ranks[0]
	s := addSeq(t, e, prompt(0, 250), 2)
	wantTimes := []time.Duration{
		prefillTime(100),
		prefillTime(100),
		prefillTime(50) + decodeTime(16*16, 16384*16),
	}
	for i, want := range wantTimes {
		if got := step(r); got != want {
			t.Errorf("pass %d took %v, want %v", i, got, want)
		}
		toks, _ := drain(s)
		if wantToks := map[bool]int{true: 1, false: 0}[i == 2]; len(toks) != wantToks {
			t.Errorf("pass %d produced %d tokens, want %d", i, len(toks), wantToks)
		}
	}
	step(r)
	if toks, fin := drain(s); len(toks) != 1 || fin != backend.FinishLength {
		t.Errorf("last pass: %v %q", toks, fin)
	}
}

func TestSchedulerPreemption(t *testing.T) {
	e := testEngine(t, func(c *Config) { c.BlockSize, c.NumGPUBlocks, c.Watermark = 4, 6, 0 })
	r := e.ranks[0]
	var seqs []*sequence
	for i := range 3 {
		seqs = append(seqs, addSeq(t, e, prompt(100*i, 4), 8))
	}
	got := make([][]uint32, len(seqs))
	for pass := 0; r.hasWork(); pass++ {
		if pass > 500 {
			t.Fatalf("not done after %d passes", pass)
		}
		step(r)
		for i, s := range seqs {
			toks, _ := drain(s)
			got[i] = append(got[i], toks...)
		}
	}
	for i, s := range seqs {
		if _, fin := drain(s); fin != backend.FinishLength {
			t.Errorf("seq %d finished %q", i, fin)
		}
	}
	if r.preemptions == 0 {
		t.Error("no preemption happened")
	}
	for i := range seqs {
		if len(got[i]) != 8 {
			t.Fatalf("seq %d: %d tokens, want 8", i, len(got[i]))
		}
		for k, tok := range got[i] {
			if want := DeterministicToken(0, 4+k); tok != want {
				t.Errorf("seq %d token %d = %d, want %d", i, k, tok, want)
			}
		}
	}
	if r.kv.activeBlocks() != 0 {
		t.Errorf("%d blocks still active", r.kv.activeBlocks())
	}
}

func TestSchedulerCachedPrefixIsFaster(t *testing.T) {
	e := testEngine(t, nil)
	r := e.ranks[0]
	p := prompt(7, 1024)
	first := addSeq(t, e, p, 1)
	cold := step(r)
	second := addSeq(t, e, p, 1)
	warm := step(r)
	if want := prefillTime(1024) + decodeTime(16*64, 16384*64); cold != want {
		t.Errorf("cold pass %v, want %v", cold, want)
	}
	if want := decodeTime(16*64, 16384*64); warm != want {
		t.Errorf("warm pass %v, want %v (no prefill)", warm, want)
	}
	if c := first.out.cachedTokens(); c != 0 {
		t.Errorf("first request cached %d tokens", c)
	}
	if c := second.out.cachedTokens(); c != 1024 {
		t.Errorf("second request cached %d tokens, want 1024", c)
	}
}

// TestSchedulerRandomWorkload runs random requests, some removed early,
// through a small cache with shared prefixes and checks the invariants:
// the cache never exceeds its capacity, every request that was not
// removed gets exactly its tokens, and nothing stays allocated.
func TestSchedulerRandomWorkload(t *testing.T) {
	for _, caching := range []bool{true, false} {
		t.Run(map[bool]string{true: "prefix caching", false: "no prefix caching"}[caching], func(t *testing.T) {
			e := testEngine(t, func(c *Config) {
				c.BlockSize, c.NumGPUBlocks, c.MaxNumBatchedTokens, c.MaxNumSeqs = 4, 40, 64, 8
				c.EnablePrefixCaching = caching
			})
			r := e.ranks[0]
			rng := rand.New(rand.NewPCG(1, 2))
			type job struct {
				s       *sequence
				max     int
				got     int
				removed bool
			}
			var jobs []*job
			for pass := 0; pass < 3000 && (pass < 200 || r.hasWork()); pass++ {
				if pass < 200 && rng.IntN(3) == 0 {
					n, max := 1+rng.IntN(40), 1+rng.IntN(60)
					p := prompt(1000*rng.IntN(3), n) // three shared prefixes
					jobs = append(jobs, &job{s: addSeq(t, e, p, max), max: max})
				}
				if len(jobs) > 0 && rng.IntN(20) == 0 {
					j := jobs[rng.IntN(len(jobs))]
					r.remove(j.s)
					j.removed = true
				}
				step(r)
				if used := r.kv.usedBlocks(); used > 40 {
					t.Fatalf("pass %d: %d blocks used, capacity 40", pass, used)
				}
				for _, j := range jobs {
					toks, _ := drain(j.s)
					j.got += len(toks)
				}
			}
			if r.hasWork() {
				t.Fatal("work left after 3000 passes")
			}
			for i, j := range jobs {
				_, fin := drain(j.s)
				if !j.removed && (j.got != j.max || fin != backend.FinishLength) {
					t.Errorf("job %d: %d of %d tokens, finish %q", i, j.got, j.max, fin)
				}
			}
			if n := r.kv.activeBlocks(); n != 0 {
				t.Errorf("%d blocks still active", n)
			}
			t.Logf("%d jobs, %d preemptions", len(jobs), r.preemptions)
		})
	}
}
