package frontend

import (
	"context"
	"net/http"

	"github.com/dynamo-go/dynamo/pkg/modelcard"
	"github.com/dynamo-go/dynamo/pkg/openai"
	"github.com/dynamo-go/dynamo/pkg/preprocessor"
)

// handleCompletions serves POST /v1/completions.
func (s *Service) handleCompletions(w http.ResponseWriter, r *http.Request) {
	s.serve(w, r, EndpointCompletions, s.decodeCompletion)
}

func (s *Service) decodeCompletion(body []byte) (apiRequest, error) {
	req, err := openai.DecodeCompletion(body, s.cfg.Decode)
	if err != nil {
		return nil, err
	}
	s.includeUsage(req.Stream, &req.StreamOptions)
	q, ww := routingAsks(req.NvExt)
	return &completionRequest{req: req, to: requestTarget{
		model: req.Model, stream: req.Stream, needs: modelcard.ModelCompletions, endpoint: EndpointCompletions,
		queryOnly: q, wantWorker: ww,
	}}, nil
}

// completionRequest is one completions request (one prompt or a batch).
type completionRequest struct {
	req *openai.CompletionRequest
	to  requestTarget
}

func (c *completionRequest) target() requestTarget { return c.to }

func (c *completionRequest) run(ctx context.Context, m ServedModel, id string, emit func(preprocessor.Event) error) error {
	return m.Complete(ctx, id, c.req, emit)
}

// prepare builds the first prompt's engine request.
func (c *completionRequest) prepare(m ServedModel) (*preprocessor.Prepared, error) {
	return m.PrepareCompletion(c.req)
}

func (c *completionRequest) fold() (func(preprocessor.Event) error, func() any) {
	acc := &preprocessor.CompletionAccumulator{}
	return folder(acc.Add, func() any { return acc.Result() })
}

func (c *completionRequest) streamFormat() streamFormat { return nil }
