package backendtest

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/dynamo-go/dynamo/pkg/backend"
)

var _ backend.EventPublisher = (*publisher)(nil)

// publisher is the kit's backend.EventPublisher: it drops what it gets
// after checking that it encodes to JSON. It is safe for concurrent use.
type publisher struct {
	mu    sync.Mutex
	n     int   // events and load metrics published
	first error // the first that did not encode
}

// PublishKVEvent checks event.
func (p *publisher) PublishKVEvent(_ context.Context, dpRank int, event any) error {
	return p.record("KV event", dpRank, event)
}

// PublishLoad checks metrics.
func (p *publisher) PublishLoad(_ context.Context, dpRank int, metrics any) error {
	return p.record("load metrics", dpRank, metrics)
}

func (p *publisher) record(kind string, dpRank int, v any) error {
	_, err := json.Marshal(v)
	if err != nil {
		err = fmt.Errorf("%s of dp rank %d (%T): %w", kind, dpRank, v, err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n++
	if err != nil && p.first == nil {
		p.first = err
	}
	return err
}

// result returns the number published and the first encoding error.
func (p *publisher) result() (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n, p.first
}
