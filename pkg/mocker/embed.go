package mocker

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/dynamo-go/dynamo/pkg/backend"
)

// embed answers an embedding request (req.Embedding set): after the time
// the timing model gives a prefill of the whole input (divided by
// SpeedupRatio), one terminal output carrying DeterministicEmbedding of
// the token ids, of Config.EmbeddingDim dimensions or the fewer the
// request asks for, with finish reason stop and usage. A request stopped
// while it waits ends cancelled; a killed one returns the context's
// cause. The errors wrap backend.ErrInvalidArgument (an engine without
// --embedding-dim, an empty or over-long input, dimensions out of range)
// or backend.ErrEngineShutdown.
func (e *Engine) embed(ctx context.Context, req *backend.Request, emit func(*backend.Output) error) error {
	dim, err := e.embeddingDim(req)
	if err != nil {
		return err
	}
	e.mu.Lock()
	running := e.running
	e.mu.Unlock()
	if !running {
		return fmt.Errorf("mocker: %w: engine not running", backend.ErrEngineShutdown)
	}
	e.inflight.Add(1)
	defer e.inflight.Add(-1)
	n := len(req.TokenIDs)
	t := time.NewTimer(scale(prefillTime(n), e.cfg.SpeedupRatio))
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-backend.Stopped(ctx):
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		if err := emit(backend.Cancelled().WithUsage(n, 0)); err != nil {
			return fmt.Errorf("mocker: emit: %w", err)
		}
		return nil
	case <-e.done:
		return fmt.Errorf("mocker: %w", backend.ErrEngineShutdown)
	}
	out := backend.Stop().WithUsage(n, 0)
	out.Embedding = DeterministicEmbedding(req.TokenIDs, dim)
	if err := emit(out); err != nil {
		return fmt.Errorf("mocker: emit: %w", err)
	}
	return nil
}

// embeddingDim checks an embedding request and returns the dimensions of
// its answer.
func (e *Engine) embeddingDim(req *backend.Request) (int, error) {
	c := &e.cfg
	if c.EmbeddingDim == 0 {
		return 0, fmt.Errorf("mocker: %w: this engine serves no embeddings (start it with --embedding-dim)", backend.ErrInvalidArgument)
	}
	n := len(req.TokenIDs)
	if n == 0 {
		return 0, fmt.Errorf("mocker: %w: empty token_ids", backend.ErrInvalidArgument)
	}
	if n > c.ContextLength {
		return 0, fmt.Errorf("mocker: %w: input has %d tokens, context length is %d", backend.ErrInvalidArgument, n, c.ContextLength)
	}
	dim := c.EmbeddingDim
	if d := req.Embedding.Dimensions; d != nil {
		if *d < 1 || *d > c.EmbeddingDim {
			return 0, fmt.Errorf("mocker: %w: dimensions %d: the model's embeddings have 1 to %d dimensions", backend.ErrInvalidArgument, *d, c.EmbeddingDim)
		}
		dim = *d
	}
	return dim, nil
}

// DeterministicEmbedding is the embedding the mocker gives token ids ids
// in dim dimensions: a unit vector (L2 norm 1) that is a pure function of
// the ids and their positions. Component j, before normalisation, is the
// sum over positions i of a uniform number in [-1, 1) drawn from
// splitmix64 of (ids[i], i, j); so the embedding in fewer dimensions is
// the normalised prefix of the one in more (as with OpenAI's text-
// embedding-3 models), and inputs that share tokens at the same positions
// point in similar directions. It returns nil for dim < 1.
func DeterministicEmbedding(ids []uint32, dim int) []float64 {
	if dim < 1 {
		return nil
	}
	v := make([]float64, dim)
	for i, id := range ids {
		h := splitmix64(uint64(id)<<32 ^ uint64(uint32(i)))
		for j := range v {
			x := splitmix64(h ^ uint64(j)*0x9e3779b97f4a7c15)
			v[j] += float64(x>>11)/(1<<52) - 1
		}
	}
	sum := 0.0
	for _, x := range v {
		sum += x * x
	}
	if sum == 0 {
		v[0], sum = 1, 1
	}
	norm := math.Sqrt(sum)
	for j := range v {
		v[j] /= norm
	}
	return v
}
