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
