package runtime

// Handler serves the requests of an endpoint. Handle is called once per
// request, concurrently, with the request's Context (same ID as the
// caller's; the caller's Stop and Kill reach it), the request payload, and
// emit, which sends one response item to the caller. Items are JSON values.
//
// Return nil after the last item. An error returned before any item was
// emitted is reported to the caller as a failed start (the response
// prologue); an error after items is sent as an error item. An error from
// emit means the caller is gone or the item was not JSON: stop and return.
type Handler interface {
	Handle(rc *Context, payload []byte, emit func(item []byte) error) error
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(rc *Context, payload []byte, emit func(item []byte) error) error

// Handle calls f.
func (f HandlerFunc) Handle(rc *Context, payload []byte, emit func(item []byte) error) error {
	return f(rc, payload, emit)
}
