package mocker

import (
	"context"
	"sync"
	"testing"

	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/kvblock"
)

// fakePublisher records what an engine publishes.
type fakePublisher struct {
	mu     sync.Mutex
	events []kvblock.RouterEvent
	ranks  []int
	loads  []kvblock.LoadEvent
}

func (p *fakePublisher) PublishKVEvent(_ context.Context, rank int, ev any) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.events = append(p.events, ev.(kvblock.RouterEvent))
	p.ranks = append(p.ranks, rank)
	return nil
}

func (p *fakePublisher) PublishLoad(_ context.Context, _ int, m any) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.loads = append(p.loads, m.(kvblock.LoadEvent))
	return nil
}

func (p *fakePublisher) snapshot() ([]kvblock.RouterEvent, []int, []kvblock.LoadEvent) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]kvblock.RouterEvent(nil), p.events...), append([]int(nil), p.ranks...),
		append([]kvblock.LoadEvent(nil), p.loads...)
}

// startEngine starts a deterministic engine (worker id 42) with a fake
// publisher; the caller must call Cleanup (inside the synctest bubble).
func startEngine(t *testing.T, mut func(*Config)) (*Engine, *fakePublisher) {
	t.Helper()
	e := testEngine(t, mut)
	pub := &fakePublisher{}
	e.SetEventPublisher(pub)
	if _, err := e.Start(t.Context(), 42); err != nil {
		t.Fatal(err)
	}
	return e, pub
}

// stopEngine cleans e up and fails the test on error.
func stopEngine(t *testing.T, e *Engine) {
	t.Helper()
	if err := e.Cleanup(context.Background()); err != nil {
		t.Error(err)
	}
}

// collector is an emit function that records outputs.
type collector struct {
	outs []*backend.Output
	// onToken, if set, is called after each recorded token output with
	// the tokens so far; its error is returned by emit.
	onToken func(n int) error
	tokenN  int
}

func (c *collector) emit(o *backend.Output) error {
	c.outs = append(c.outs, o)
	if !o.IsTerminal() {
		c.tokenN += len(o.TokenIDs)
		if c.onToken != nil {
			return c.onToken(c.tokenN)
		}
	}
	return nil
}

func (c *collector) tokens() []uint32 {
	var out []uint32
	for _, o := range c.outs {
		out = append(out, o.TokenIDs...)
	}
	return out
}

func (c *collector) terminal(t *testing.T) *backend.Output {
	t.Helper()
	if len(c.outs) == 0 || !c.outs[len(c.outs)-1].IsTerminal() {
		t.Fatalf("no terminal output among %d", len(c.outs))
	}
	for _, o := range c.outs[:len(c.outs)-1] {
		if o.IsTerminal() || len(o.TokenIDs) == 0 {
			t.Fatalf("bad non-final output %+v", o)
		}
	}
	return c.outs[len(c.outs)-1]
}

// request returns a request with the given prompt and max_tokens (< 0:
// unset) and seed.
func request(tokens []uint32, maxTokens int, seed int64) *backend.Request {
	r := &backend.Request{Model: "mocker", TokenIDs: tokens}
	if maxTokens >= 0 {
		r.StopConditions.MaxTokens = backend.Ptr(uint32(maxTokens))
	}
	r.SamplingOptions.Seed = backend.Ptr(seed)
	return r
}

// activeBlocks is the number of active blocks of a rank.
func activeBlocks(e *Engine, rank int) int {
	r := e.ranks[rank]
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.kv.activeBlocks()
}
