package worker

import "context"

// probeEngine asks the engine's backend.HealthProber once, bounded by the
// request timeout, and applies the verdict with the last canary's: a
// failure takes the endpoint out of routing (logged once, with the
// prober's error), a pass puts it back if the last canary passed too. It
// reports whether the engine just recovered while the last canary had
// failed, so that Run sends a canary at once rather than a wait time
// later.
func (c *canary) probeEngine(ctx context.Context) (recheck bool) {
	pctx, cancel := context.WithTimeout(ctx, c.cfg.RequestTimeout)
	err := c.prober.Healthy(pctx)
	cancel()
	if ctx.Err() != nil {
		return false // shutting down
	}
	was := c.engineErr
	c.engineErr = ""
	if err != nil {
		c.engineErr = "the engine reports itself unhealthy: " + err.Error()
	}
	c.apply(ctx, c.engineErr)
	return was != "" && c.engineErr == "" && !c.canaryOK
}
