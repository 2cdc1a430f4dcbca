// Package frontend is the OpenAI-compatible HTTP layer: chi routes for
// /v1/chat/completions, /v1/completions (SSE streaming and unary),
// /v1/embeddings, /v1/models, /health, /live, /metrics and /busy_threshold; access control
// (optional API keys, auth.go; CORS, cors.go); request decoding and the
// request context; the mapping of every error to one HTTP status
// and OpenAI error body (classify; only the 401 of a missing or wrong key
// is auth's own, in the nested form OpenAI gives it); the HTTP layer's
// metrics; and its per-request log lines (reqlog.go: admitted and ended
// at debug level, the optional access log at info).
//
// It does not know how a model is served: it asks the model registry
// (*pipeline.Registry, through the small models interface) for a model by
// name and runs the request with the model's preprocessor over the model's
// chain. cmd/frontend reads flags and environment into Config and runs a
// Service next to the registry. Service.Run blocks until its context ends
// and the server has drained.
package frontend
