package runtime

// OnStreamIdle sets f as c's stream-idle hook. While a call made with c,
// or with a Context linked under it (a migration attempt's child), streams
// its response (Client.Call), the runtime calls f each time it has handed
// every response item it had received to emit and is about to wait for
// more from the network, and once more when the stream ends. f runs on
// the goroutine that made the call, between emits; set it before the call.
//
// A consumer that writes each item to a buffered connection (an SSE
// response) writes without flushing in emit and flushes in f: items that
// arrived together leave in one write, and a lone item at once.
func (c *Context) OnStreamIdle(f func()) { c.idle.Store(&f) }

// streamIdle returns the stream-idle hook of rc or of its nearest
// ancestor Context that has one, or a no-op.
func streamIdle(rc *Context) func() {
	for c := rc; c != nil; {
		if f := c.idle.Load(); f != nil && *f != nil {
			return *f
		}
		parent, _ := c.Context.Value(contextKey{}).(*Context)
		c = parent
	}
	return func() {}
}
