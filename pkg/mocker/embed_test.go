package mocker

import (
	"errors"
	"math"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/dynamo-go/dynamo/pkg/backend"
)

// embedRequest asks for the embedding of ids, in dims dimensions (0: the
// model's).
func embedRequest(ids []uint32, dims int) *backend.Request {
	r := &backend.Request{Model: "mocker", TokenIDs: ids, Embedding: &backend.EmbeddingOptions{}}
	if dims != 0 {
		r.Embedding.Dimensions = backend.Ptr(dims)
	}
	return r
}

func norm(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x * x
	}
	return math.Sqrt(s)
}

func TestEmbedAnswersOneUnitVectorAfterAPrefill(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, _ := startEngine(t, func(c *Config) { c.EmbeddingDim = 64 })
		defer stopEngine(t, e)
		var c collector
		start := time.Now()
		if err := e.Generate(t.Context(), embedRequest(prompt(5, 100), 0), c.emit); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took != prefillTime(100) {
			t.Errorf("took %v, want a prefill of 100 tokens, %v", took, prefillTime(100))
		}
		if len(c.outs) != 1 {
			t.Fatalf("%d outputs, want one", len(c.outs))
		}
		out := c.terminal(t)
		if out.FinishReason.Kind != backend.FinishStop || len(out.TokenIDs) != 0 {
			t.Errorf("finish %v with %d token ids; want stop and none", out.FinishReason, len(out.TokenIDs))
		}
		if diff := cmp.Diff(&backend.Usage{PromptTokens: 100, TotalTokens: 100}, out.CompletionUsage); diff != "" {
			t.Errorf("usage (-want +got):\n%s", diff)
		}
		if len(out.Embedding) != 64 || math.Abs(norm(out.Embedding)-1) > 1e-12 {
			t.Errorf("embedding of %d dimensions with norm %v; want 64 and 1", len(out.Embedding), norm(out.Embedding))
		}
		if diff := cmp.Diff(DeterministicEmbedding(prompt(5, 100), 64), out.Embedding); diff != "" {
			t.Errorf("embedding is not DeterministicEmbedding (-want +got):\n%s", diff)
		}
		if !e.IsQuiescent() {
			t.Error("not quiescent after the request")
		}
	})
}

func TestEmbedDimensions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, _ := startEngine(t, func(c *Config) { c.EmbeddingDim = 32 })
		defer stopEngine(t, e)
		ids := []uint32{7, 8, 9}
		for _, d := range []int{1, 8, 32} {
			var c collector
			if err := e.Generate(t.Context(), embedRequest(ids, d), c.emit); err != nil {
				t.Fatalf("dimensions %d: %v", d, err)
			}
			v := c.terminal(t).Embedding
			if len(v) != d || math.Abs(norm(v)-1) > 1e-12 {
				t.Errorf("dimensions %d: got %d with norm %v", d, len(v), norm(v))
			}
			// Fewer dimensions are the normalised prefix of the full vector.
			full := DeterministicEmbedding(ids, 32)[:d]
			scale := norm(full)
			for j := range v {
				if math.Abs(v[j]-full[j]/scale) > 1e-12 {
					t.Fatalf("dimensions %d: component %d is %v, want %v", d, j, v[j], full[j]/scale)
				}
			}
		}
		for _, d := range []int{-1, 0, 33} {
			r := embedRequest(ids, 0)
			r.Embedding.Dimensions = backend.Ptr(d)
			err := e.Generate(t.Context(), r, (&collector{}).emit)
			if !errors.Is(err, backend.ErrInvalidArgument) {
				t.Errorf("dimensions %d: error %v, want invalid argument", d, err)
			}
		}
	})
}

func TestEmbedRefusals(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		plain, _ := startEngine(t, nil)
		defer stopEngine(t, plain)
		if err := plain.Generate(t.Context(), embedRequest([]uint32{1}, 0), (&collector{}).emit); !errors.Is(err, backend.ErrInvalidArgument) {
			t.Errorf("an engine without EmbeddingDim: error %v, want invalid argument", err)
		}
		e, _ := startEngine(t, func(c *Config) { c.EmbeddingDim = 8; c.ContextLength = 10 })
		defer stopEngine(t, e)
		for name, ids := range map[string][]uint32{"empty": {}, "over the context": prompt(0, 11)} {
			if err := e.Generate(t.Context(), embedRequest(ids, 0), (&collector{}).emit); !errors.Is(err, backend.ErrInvalidArgument) {
				t.Errorf("%s input: error %v, want invalid argument", name, err)
			}
		}
		// An input of exactly the context length needs no room to generate.
		if err := e.Generate(t.Context(), embedRequest(prompt(0, 10), 0), (&collector{}).emit); err != nil {
			t.Errorf("an input of the context length: %v", err)
		}
		// The embedding engine still generates.
		var c collector
		if err := e.Generate(t.Context(), request(prompt(0, 3), 2, 1), c.emit); err != nil || len(c.tokens()) != 2 {
			t.Errorf("generation on an embedding engine: %d tokens, %v", len(c.tokens()), err)
		}
	})
}

func TestEmbedValidatesConfig(t *testing.T) {
	c := DefaultConfig()
	c.EmbeddingDim = -1
	if err := c.Validate(); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("EmbeddingDim -1: %v, want invalid config", err)
	}
}

func TestDeterministicEmbedding(t *testing.T) {
	a := DeterministicEmbedding([]uint32{1, 2, 3}, 16)
	if diff := cmp.Diff(a, DeterministicEmbedding([]uint32{1, 2, 3}, 16)); diff != "" {
		t.Errorf("not a pure function (-first +second):\n%s", diff)
	}
	dot := func(x, y []float64) float64 {
		s := 0.0
		for i := range x {
			s += x[i] * y[i]
		}
		return s
	}
	// Order matters: the same tokens elsewhere are another input.
	if b := DeterministicEmbedding([]uint32{3, 2, 1}, 16); dot(a, b) > 0.99 {
		t.Errorf("reordered tokens give a cosine of %v with the original", dot(a, b))
	}
	if v := DeterministicEmbedding(nil, 4); math.Abs(norm(v)-1) > 1e-12 {
		t.Errorf("no tokens: %v, want a unit vector", v)
	}
	if v := DeterministicEmbedding([]uint32{1}, 0); v != nil {
		t.Errorf("0 dimensions: %v, want nil", v)
	}
}
