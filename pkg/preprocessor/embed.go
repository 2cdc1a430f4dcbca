package preprocessor

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"go.opentelemetry.io/otel/attribute"

	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/openai"
	"github.com/dynamo-go/dynamo/pkg/runtime"
)

// EmbedConcurrency is the most engine requests one embeddings request has
// in flight at a time.
const EmbedConcurrency = 8

// errNoEmbedding: the engine ended an embedding request without one.
var errNoEmbedding = errors.New("preprocessor: the engine answered an embedding request without an embedding")

// Embed serves one embeddings request. Each input becomes one engine
// request (backend.Request.Embedding set): text is tokenized with the
// tokenizer's special tokens unless add_special_tokens is false (no chat
// template), token ids are taken as given. The requests go through next,
// at most EmbedConcurrency at a time, each of a batch under its own
// request context "<id>-<i>" linked to ctx's; the first failure kills the
// others. The embeddings come back in input order, encoded as the request
// asks.
//
// A refused input (empty, over the context length, a token id outside the
// vocabulary) is a *openai.ValidationError naming it; so is the engine's
// refusal of the dimensions asked for (an invalid-argument error whose
// message speaks of dimensions, param "dimensions"). Another refusal is
// the engine's error.
func (m *Model) Embed(ctx context.Context, id string, req *openai.EmbeddingRequest, next backend.Generator) (*openai.EmbeddingResponse, error) {
	reqs, err := m.prepareEmbedding(ctx, req)
	if err != nil {
		return nil, err
	}
	vecs, prompt, err := m.runEmbedding(ctx, id, reqs, next)
	if err != nil {
		return nil, dimensionsError(req, err)
	}
	resp := &openai.EmbeddingResponse{
		Object: openai.ObjectList,
		Data:   make([]openai.EmbeddingData, len(vecs)),
		Model:  req.Model,
		Usage:  openai.EmbeddingUsage{PromptTokens: prompt, TotalTokens: prompt},
	}
	for i, v := range vecs {
		resp.Data[i] = openai.EmbeddingData{Object: openai.ObjectEmbedding, Embedding: openai.NewEmbeddingVector(v, req.EncodingFormat), Index: i}
	}
	return resp, nil
}

// dimensionsError turns an engine's refusal of the dimensions a request
// asked for into a validation error on "dimensions": the model's
// dimensions are known only to its engine, so the refusal comes back as
// an invalid-argument error whose message names them.
func dimensionsError(req *openai.EmbeddingRequest, err error) error {
	var re *runtime.Error
	if req.Dimensions == nil || !errors.As(err, &re) || re.Type != runtime.TypeInvalidArgument ||
		!strings.Contains(strings.ToLower(err.Error()), "dimension") {
		return err
	}
	msg := re.Message
	if msg == "" {
		msg = err.Error()
	}
	return &openai.ValidationError{Message: msg, Param: "dimensions"}
}

// PrepareEmbedding builds the engine request of each input of req, in
// order.
func (m *Model) PrepareEmbedding(req *openai.EmbeddingRequest) ([]*backend.Request, error) {
	return m.prepareEmbedding(context.Background(), req)
}

// prepareEmbedding is PrepareEmbedding under a "preprocess" span of ctx's,
// with a "tokenize" child per text input.
func (m *Model) prepareEmbedding(ctx context.Context, req *openai.EmbeddingRequest) (_ []*backend.Request, err error) {
	ctx, span := m.tracer.Start(ctx, "preprocess")
	defer func() { endSpan(span, err) }()
	if m.tok == nil {
		return nil, needsTokenizer("", "embeddings")
	}
	in := req.Input
	list := in.Texts != nil || in.TokenSet != nil
	addSpecial := req.AddSpecialTokens == nil || *req.AddSpecialTokens
	var opts *backend.EmbeddingOptions
	if req.Dimensions != nil {
		opts = &backend.EmbeddingOptions{Dimensions: backend.Ptr(*req.Dimensions)}
	}
	n := in.Count()
	out := make([]*backend.Request, n)
	total := 0
	for i := range n {
		param := openai.InputParam(i, list)
		var ids []uint32
		switch {
		case in.Text != nil || in.Texts != nil:
			text := in.Texts
			if in.Text != nil {
				text = []string{*in.Text}
			}
			tctx, tspan := m.tracer.Start(ctx, "tokenize")
			ids, err = m.encode(tctx, text[i], addSpecial, param)
			tspan.SetAttributes(attribute.Int("token_count", len(ids)))
			endSpan(tspan, err)
			if err != nil {
				return nil, err
			}
		default:
			ids = in.Tokens
			if in.TokenSet != nil {
				ids = in.TokenSet[i]
			}
			ids = append([]uint32(nil), ids...)
			if err := m.checkEmbedVocab(ids, param); err != nil {
				return nil, err
			}
		}
		if err := m.checkEmbedInput(ids, param); err != nil {
			return nil, err
		}
		total += len(ids)
		r := m.buildRequest(ids, options{}, &openai.CommonExt{NvExt: req.NvExt})
		r.Embedding = &backend.EmbeddingOptions{}
		if opts != nil {
			r.Embedding = opts
		}
		out[i] = r
	}
	span.SetAttributes(attribute.Int("input_tokens", total), attribute.Int("inputs", n))
	return out, nil
}

// checkEmbedVocab refuses token ids the model does not have.
func (m *Model) checkEmbedVocab(ids []uint32, param string) error {
	n := m.vocabSize()
	for _, id := range ids {
		if int(id) >= n {
			return invalidParam(param, "Validation: token id %d is out of range: the model's vocabulary has %d tokens", id, n)
		}
	}
	return nil
}

// checkEmbedInput refuses an empty input or one longer than the context
// (an input may fill it: nothing is generated after it).
func (m *Model) checkEmbedInput(ids []uint32, param string) error {
	if len(ids) == 0 {
		return invalidParam(param, "Validation: %s resulted in no tokens", param)
	}
	if n := m.card.ContextLength; n > 0 && len(ids) > int(n) {
		return invalidParam(param, "This model's maximum context length is %d tokens. However, your %s resulted in %d tokens. Please reduce the length of the %s.", n, param, len(ids), param)
	}
	return nil
}

// runEmbedding sends reqs through next, at most EmbedConcurrency at a
// time, and returns their embeddings in order and the input tokens in
// all. One request runs under ctx itself; a batch's each under its own
// request context "<id>-<i>".
func (m *Model) runEmbedding(ctx context.Context, id string, reqs []*backend.Request, next backend.Generator) ([][]float64, int, error) {
	vecs := make([][]float64, len(reqs))
	tokens := make([]int, len(reqs))
	if len(reqs) == 1 {
		v, n, err := embedOne(ctx, reqs[0], next)
		return [][]float64{v}, n, err
	}
	parent, hasParent := runtime.FromContext(ctx)
	group, abort := context.WithCancelCause(ctx)
	defer abort(nil)
	var (
		mu       sync.Mutex
		firstErr error
		wg       sync.WaitGroup
	)
	work := make(chan int)
	for range min(EmbedConcurrency, len(reqs)) {
		wg.Go(func() {
			for i := range work {
				sub := runtime.NewContext(group, fmt.Sprintf("%s-%d", id, i))
				if hasParent {
					parent.LinkChild(sub)
				}
				v, n, err := embedOne(sub, reqs[i], next)
				sub.Release()
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
						abort(err)
					}
					mu.Unlock()
					continue
				}
				vecs[i], tokens[i] = v, n
			}
		})
	}
feed:
	for i := range reqs {
		select {
		case work <- i:
		case <-group.Done():
			break feed
		}
	}
	close(work)
	wg.Wait()
	if firstErr == nil && group.Err() != nil {
		firstErr = context.Cause(group)
	}
	if firstErr != nil {
		return nil, 0, firstErr
	}
	total := 0
	for _, n := range tokens {
		total += n
	}
	return vecs, total, nil
}

// embedOne runs one embedding request and returns its embedding and its
// input tokens (the engine's count, else the request's).
func embedOne(ctx context.Context, req *backend.Request, next backend.Generator) ([]float64, int, error) {
	var (
		vec    []float64
		tokens = len(req.TokenIDs)
		finish *backend.FinishReason
	)
	err := next.Generate(ctx, req, func(o *backend.Output) error {
		if o.Embedding != nil {
			vec = o.Embedding
		}
		if u := o.CompletionUsage; u != nil && u.PromptTokens > 0 {
			tokens = u.PromptTokens
		}
		if o.FinishReason != nil {
			finish = o.FinishReason
		}
		return nil
	})
	switch {
	case err != nil:
		return nil, 0, err
	case finish != nil && finish.Kind == backend.FinishError:
		return nil, 0, &runtime.Error{Type: runtime.TypeUnknown, Message: finish.Message}
	case finish != nil && finish.Kind == backend.FinishCancelled:
		return nil, 0, fmt.Errorf("preprocessor: embedding request: %w", runtime.ErrCancelled)
	case vec == nil:
		return nil, 0, errNoEmbedding
	}
	return vec, tokens, nil
}
