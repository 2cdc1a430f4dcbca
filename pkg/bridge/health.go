package bridge

import (
	"context"
	"time"
)

// healthTimeout bounds one Healthy call.
const healthTimeout = 2 * time.Second

// Healthy asks the engine's /health (as Start does: vLLM and SGLang 200,
// llama.cpp 200 with status "ok") within two seconds, and returns nil
// when it answers healthy, else why not. It implements
// backend.HealthProber.
func (e *Engine) Healthy(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, healthTimeout)
	defer cancel()
	return e.d.health(ctx, e)
}
