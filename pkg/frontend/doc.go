// Package frontend is the OpenAI-compatible HTTP service: chi routes for
// /v1/chat/completions, /v1/completions and /v1/models (SSE streaming and
// unary), /health, /live and /metrics; a model registry fed by discovery
// that builds one pipeline per model (preprocessor -> migration -> push
// router) when the model's first worker appears and drops it with the last;
// the mapping of every error to one HTTP status and flat error body; and
// the request metrics.
//
// cmd/frontend reads flags and environment into Config and runs a Service.
package frontend
