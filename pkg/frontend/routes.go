package frontend

import (
	"fmt"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/dynamo-go/dynamo/pkg/modelcard"
	"github.com/dynamo-go/dynamo/pkg/openai"
	"github.com/dynamo-go/dynamo/pkg/runtime"
)

// routes builds the chi router. Panics are recovered outermost; then
// the access log (Config.AccessLog: it sees every request, refused ones
// too); then access control: CORS (so a preflight needs no key, and a
// 401 reaches the page), then the API key.
func (s *Service) routes(metrics http.Handler) http.Handler {
	r := chi.NewRouter()
	var access func(http.Handler) http.Handler
	if s.cfg.AccessLog {
		access = s.accessLog
	}
	for _, mw := range []func(http.Handler) http.Handler{
		recoverPanics(s.log),
		access,
		newCORS(s.cfg.CORSAllowedOrigins),
		newAuth(s.cfg.APIKeys, s.cfg.AuthExemptPaths, s.log),
	} {
		if mw != nil {
			r.Use(mw)
		}
	}
	r.Post("/v1/chat/completions", s.handleChat)
	r.Post("/v1/completions", s.handleCompletions)
	r.Post("/v1/responses", s.handleResponses)
	r.Post(messagesPath, s.handleMessages)
	r.Post(messagesPath+"/count_tokens", s.handleCountTokens)
	r.Get("/v1/responses/{id}", s.handleGetResponse)
	r.Delete("/v1/responses/{id}", s.handleDeleteResponse)
	r.Get("/v1/responses/{id}/input_items", s.handleInputItems)
	r.Post("/v1/responses/{id}/cancel", s.handleCancelResponse)
	r.Post("/v1/embeddings", s.handleEmbeddings)
	r.Post("/v1/loras", s.handleLoadLora)
	r.Get("/v1/loras", s.handleListLoras)
	r.Delete("/v1/loras/{name}", s.handleDeleteLora)
	r.Get("/v1/models", s.handleModels)
	r.Get("/v1/models/*", s.handleModel)
	r.Get("/health", s.handleHealth)
	r.Get("/live", s.handleLive)
	r.Get("/busy_threshold", s.handleBusyThresholds)
	r.Post("/busy_threshold", s.handleSetBusyThreshold)
	r.Method(http.MethodGet, "/metrics", metrics)
	r.NotFound(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, shapeOf(r), apiError{status: http.StatusNotFound, kind: ErrNotFound, message: fmt.Sprintf("Route not found: %s %s", r.Method, r.URL.Path), param: ""})
	})
	r.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, shapeOf(r), apiError{status: http.StatusMethodNotAllowed, kind: ErrValidation, message: fmt.Sprintf("Method not allowed: %s %s", r.Method, r.URL.Path), param: ""})
	})
	return r
}

// handleModels lists the models that have workers.
func (s *Service) handleModels(w http.ResponseWriter, _ *http.Request) {
	list := openai.ModelList{Object: "list", Data: []openai.Model{}}
	now := s.clock().Unix()
	for _, m := range s.models.Models() {
		if m.Ready() {
			list.Data = append(list.Data, modelObject(m, now))
		}
	}
	writeJSON(w, http.StatusOK, list)
}

// handleModel describes one model, by any of its served names.
func (s *Service) handleModel(w http.ResponseWriter, r *http.Request) {
	name := chi.URLParam(r, "*")
	m := s.models.Lookup(name)
	if m == nil || !m.Ready() {
		writeError(w, openAIErrors, apiError{status: http.StatusNotFound, kind: ErrNotFound, message: s.modelNotFound(name, 0).Error(), param: ""})
		return
	}
	writeJSON(w, http.StatusOK, modelObject(m, s.clock().Unix()))
}

// modelObject is m as /v1/models shows it: a LoRA adapter with its base
// model as root and parent.
func modelObject(m ServedModel, created int64) openai.Model {
	p := m.Card().RuntimeConfig.Processing()
	o := openai.Model{ID: m.Name(), Object: "model", Created: created, OwnedBy: "nvidia", MaxModelLen: int(m.Card().ContextLength),
		Processing: &openai.ModelProcessing{Preprocessing: p.Preprocessing, Postprocessing: p.Postprocessing}}
	if l := m.Card().Lora; l != nil {
		o.Root, o.Parent = l.BaseModel, l.BaseModel
	}
	return o
}

type healthBody struct {
	Status                   string   `json:"status"`
	Message                  string   `json:"message"`
	Endpoints                []string `json:"endpoints,omitempty"`
	Instances                []any    `json:"instances,omitempty"`
	InitialDiscoveryComplete *bool    `json:"initial_discovery_complete,omitempty"`
	// KVRouting gives each model's KV routing mode (router mode kv):
	// "events", or "approximate (no KV events: ...)" when it fell back.
	KVRouting map[string]string `json:"kv_routing,omitempty"`
	// Discovery is the link to etcd. An outage leaves the status healthy:
	// the frontend keeps routing to the workers it knows.
	Discovery *runtime.DiscoveryStatus `json:"discovery,omitempty"`
}

// handleLive answers 200 while the service runs, 503 once it shuts down.
func (s *Service) handleLive(w http.ResponseWriter, _ *http.Request) {
	if s.shuttingDown.Load() {
		writeJSON(w, http.StatusServiceUnavailable, healthBody{Status: "shutting_down", Message: "Service is shutting down"})
		return
	}
	writeJSON(w, http.StatusOK, healthBody{Status: "live", Message: "Service is live"})
}

// handleHealth answers 200 with the served endpoints and worker instances
// once the first discovery snapshot is in, 503 before and during shutdown.
func (s *Service) handleHealth(w http.ResponseWriter, _ *http.Request) {
	synced := s.models.Synced()
	switch {
	case s.shuttingDown.Load():
		writeJSON(w, http.StatusServiceUnavailable, healthBody{Status: "shutting_down", Message: "Service is shutting down"})
		return
	case !synced:
		writeJSON(w, http.StatusServiceUnavailable, healthBody{Status: "not_ready", Message: "Waiting for the first discovery sync", InitialDiscoveryComplete: &synced})
		return
	}
	disc := s.models.Discovery()
	body := healthBody{Status: "healthy", Message: "Service is healthy", Endpoints: []string{}, Instances: []any{}, InitialDiscoveryComplete: &synced, Discovery: &disc}
	ready := false
	var serves modelcard.ModelType // of the ready models
	for _, m := range s.models.Models() {
		if m.Ready() {
			ready = true
			serves |= m.Card().ModelType
		}
		mode, fallback, ok := m.KVRouting()
		if !ok {
			continue
		}
		if body.KVRouting == nil {
			body.KVRouting = map[string]string{}
		}
		if fallback {
			mode += " (no KV events: the event plane needs NATS, --request-plane nats)"
		}
		body.KVRouting[m.Name()] = mode
	}
	for _, e := range []struct {
		t    modelcard.ModelType
		path string
	}{{modelcard.ModelChat, "/v1/chat/completions"}, {modelcard.ModelChat, "/v1/responses"}, {modelcard.ModelChat, messagesPath},
		{modelcard.ModelCompletions, "/v1/completions"}, {modelcard.ModelEmbedding, "/v1/embeddings"}} {
		if serves.Has(e.t) {
			body.Endpoints = append(body.Endpoints, e.path)
		}
	}
	if ready {
		body.Endpoints = append(body.Endpoints, "/v1/models")
	}
	for _, in := range s.models.Instances() {
		body.Instances = append(body.Instances, in)
	}
	writeJSON(w, http.StatusOK, body)
}
