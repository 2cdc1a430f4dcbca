package frontend

import (
	"context"
	"net/http"

	"github.com/dynamo-go/dynamo/pkg/modelcard"
	"github.com/dynamo-go/dynamo/pkg/openai"
	"github.com/dynamo-go/dynamo/pkg/preprocessor"
)

// handleChat serves POST /v1/chat/completions.
func (s *Service) handleChat(w http.ResponseWriter, r *http.Request) {
	s.serve(w, r, EndpointChat, s.decodeChat)
}

func (s *Service) decodeChat(body []byte) (apiRequest, error) {
	req, err := openai.DecodeChat(body, s.cfg.Decode)
	if err != nil {
		return nil, err
	}
	s.includeUsage(req.Stream, &req.StreamOptions)
	q, ww := routingAsks(req.NvExt)
	return &chatRequest{req: req, to: requestTarget{
		model: req.Model, stream: req.Stream, needs: modelcard.ModelChat, endpoint: EndpointChat,
		queryOnly: q, wantWorker: ww,
	}}, nil
}

// chatRequest is one chat completions request.
type chatRequest struct {
	req *openai.ChatCompletionRequest
	to  requestTarget
}

func (c *chatRequest) target() requestTarget { return c.to }

func (c *chatRequest) run(ctx context.Context, m ServedModel, id string, emit func(preprocessor.Event) error) error {
	return m.Chat(ctx, id, c.req, emit)
}

func (c *chatRequest) prepare(m ServedModel) (*preprocessor.Prepared, error) {
	return m.PrepareChat(c.req)
}

func (c *chatRequest) fold() (func(preprocessor.Event) error, func() any) {
	acc := &preprocessor.ChatAccumulator{}
	return folder(acc.Add, func() any { return acc.Result() })
}

func (c *chatRequest) streamFormat() streamFormat { return nil }
