package backend

import "context"

// HealthProber is an engine that can tell cheaply whether it is healthy,
// for example an engine process behind an HTTP /health. With health
// checks enabled (the worker's canary), the worker calls Healthy every
// probe interval, busy or idle; while it returns an error the endpoint is
// out of routing and reported notready, as after a failed canary, and
// it comes back once Healthy returns nil again (and a canary passes).
// Healthy must return within the ctx's deadline and is called from one
// goroutine at a time.
type HealthProber interface {
	Healthy(ctx context.Context) error
}
