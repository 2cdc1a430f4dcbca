package hfhub

import "errors"

// Errors callers can match with errors.Is.
var (
	// ErrNotFound: the model, the revision or a required file does not exist
	// on the hub.
	ErrNotFound = errors.New("hfhub: not found")
	// ErrUnauthorized: the hub refused access (HTTP 401/403): a private or
	// gated model needs HF_TOKEN.
	ErrUnauthorized = errors.New("hfhub: unauthorized")
	// ErrNotCached: offline mode and the model is not in the cache.
	ErrNotCached = errors.New("hfhub: not in the cache")
	// ErrInvalidPath: the model path is neither a local directory nor a hub
	// id of the form org/name.
	ErrInvalidPath = errors.New("hfhub: invalid model path")
)
