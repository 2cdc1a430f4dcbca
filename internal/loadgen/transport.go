package loadgen

import (
	"net"
	"net/http"
	"time"
)

// NewTransport returns the one transport a run shares: HTTP/1.1 with
// keep-alive, an idle pool of conns connections per host (so every
// worker or in-flight request keeps its connection), no compression, no
// proxy, and connectTimeout to dial.
func NewTransport(conns int, connectTimeout time.Duration) *http.Transport {
	return &http.Transport{
		DialContext: (&net.Dialer{
			Timeout:   connectTimeout,
			KeepAlive: 30 * time.Second,
		}).DialContext,
		MaxIdleConns:        conns,
		MaxIdleConnsPerHost: conns,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
		TLSHandshakeTimeout: connectTimeout,
	}
}

// oneShotClient returns a client like c whose every request goes on a
// new connection of its own, closed after the response: c's transport
// cloned with keep-alives off. It sends the retries of requests the
// server never received (see requester.send), so a retry can never land
// on another stale pooled connection. It is nil when c's transport is
// not an *http.Transport (a nil one is http.DefaultTransport): such a
// client's requests are not retried.
func oneShotClient(c *http.Client) *http.Client {
	rt := c.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	tr, ok := rt.(*http.Transport)
	if !ok {
		return nil
	}
	tr = tr.Clone()
	tr.DisableKeepAlives = true
	return &http.Client{Transport: tr, CheckRedirect: c.CheckRedirect, Jar: c.Jar, Timeout: c.Timeout}
}
