package frontend

import (
	"context"
	"net/http"

	"github.com/dynamo-go/dynamo/pkg/modelcard"
	"github.com/dynamo-go/dynamo/pkg/openai"
	"github.com/dynamo-go/dynamo/pkg/pipeline"
	"github.com/dynamo-go/dynamo/pkg/preprocessor"
)

// handleEmbeddings serves POST /v1/embeddings for models whose card has
// model type Embedding: the preprocessor tokenizes each input and sends
// one engine request per input through the model's chain; the answer is
// one JSON body with the embeddings in input order. A model that does
// not embed is "Model not found" (404), as a chat model is on
// /v1/embeddings in the reference system.
func (s *Service) handleEmbeddings(w http.ResponseWriter, r *http.Request) {
	s.serve(w, r, EndpointEmbeddings, func(body []byte) (*call, error) {
		req, err := openai.DecodeEmbedding(body, s.cfg.Decode)
		if err != nil {
			return nil, err
		}
		return &call{
			model: req.Model, needs: modelcard.ModelEmbedding, endpoint: EndpointEmbeddings,
			run: func(ctx context.Context, m *pipeline.Model, id string, emit func(preprocessor.Event) error) error {
				req.Model = m.Name()
				resp, err := m.Preprocessor().Embed(ctx, id, req, m)
				if err != nil {
					return err
				}
				return emit(preprocessor.Event{Data: resp})
			},
			fold: func() (func(preprocessor.Event) error, func() any) {
				var resp *openai.EmbeddingResponse
				return folder(func(r *openai.EmbeddingResponse) { resp = r }, func() any { return resp })
			},
		}, nil
	})
}
