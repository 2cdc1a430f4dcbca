package frontend

import (
	"context"
	"net/http"

	"github.com/dynamo-go/dynamo/pkg/modelcard"
	"github.com/dynamo-go/dynamo/pkg/openai"
	"github.com/dynamo-go/dynamo/pkg/preprocessor"
)

// handleEmbeddings serves POST /v1/embeddings for models whose card has
// model type Embedding: the preprocessor tokenizes each input and sends
// one engine request per input through the model's chain; the answer is
// one JSON body with the embeddings in input order. A model that does
// not embed is "Model not found" (404), as a chat model is on
// /v1/embeddings in the reference system.
func (s *Service) handleEmbeddings(w http.ResponseWriter, r *http.Request) {
	s.serve(w, r, EndpointEmbeddings, s.decodeEmbedding)
}

func (s *Service) decodeEmbedding(body []byte) (apiRequest, error) {
	req, err := openai.DecodeEmbedding(body, s.cfg.Decode)
	if err != nil {
		return nil, err
	}
	return &embeddingRequest{req: req}, nil
}

// embeddingRequest is one embeddings request: never streamed, its one
// event the whole response.
type embeddingRequest struct {
	req *openai.EmbeddingRequest
}

func (e *embeddingRequest) target() requestTarget {
	return requestTarget{model: e.req.Model, needs: modelcard.ModelEmbedding, endpoint: EndpointEmbeddings}
}

func (e *embeddingRequest) run(ctx context.Context, m ServedModel, id string, emit func(preprocessor.Event) error) error {
	resp, err := m.Embed(ctx, id, e.req)
	if err != nil {
		return err
	}
	return emit(preprocessor.Event{Data: resp})
}

func (e *embeddingRequest) fold() (func(preprocessor.Event) error, func() any) {
	var resp *openai.EmbeddingResponse
	return folder(func(r *openai.EmbeddingResponse) { resp = r }, func() any { return resp })
}

func (e *embeddingRequest) streamFormat() streamFormat { return nil }
