package runtime

import (
	"fmt"
	"log/slog"
	"net"

	"github.com/dynamo-go/dynamo/pkg/runtime/internal/respstream"
)

// The caller's response stream server (respstream.Server), as the
// runtime holds it: one per process, started by the first call.

// streamServer returns the response stream server, starting it on first use.
func (rt *DistributedRuntime) streamServer() (*respstream.Server, error) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.streams != nil {
		return rt.streams, nil
	}
	s, err := listenStreams(rt.cfg, rt.log)
	if err != nil {
		return nil, err
	}
	if !rt.bg.goRun("response stream server", s.Run) {
		s.Close()
		return nil, ErrRuntimeClosed
	}
	rt.streams = s
	return s, nil
}

// streamsIfStarted returns the response stream server if it runs.
func (rt *DistributedRuntime) streamsIfStarted() *respstream.Server {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return rt.streams
}

// listenStreams opens the response stream server that cfg describes.
func listenStreams(cfg Config, log *slog.Logger) (*respstream.Server, error) {
	return respstream.Listen(respstream.ServerConfig{
		Addr:           net.JoinHostPort(cfg.ResponseStreamBindHost(), fmt.Sprint(cfg.ResponseStreamPort)),
		AdvertiseHost:  cfg.ResponseStreamHost,
		MaxMessageSize: cfg.MaxMessageSize,
		Window:         cfg.ResponseStreamWindow,
		OrphanTimeout:  cfg.OrphanedStreamTimeout,
	}, log)
}

// streamInstance names an instance to the response stream server.
func streamInstance(ep EndpointID, id uint64) respstream.Instance {
	return respstream.Instance{Endpoint: ep.Path(), ID: id}
}
