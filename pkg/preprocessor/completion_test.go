package preprocessor

import (
	"context"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/openai"
	"github.com/dynamo-go/dynamo/pkg/runtime"
)

// echoEngine streams, for each request, the ids given for its prompt
// length, and records the request context ids it saw.
type echoEngine struct {
	texts map[int][]uint32 // prompt length -> ids to stream
	mu    sync.Mutex
	ids   []string
	stops int
}

func (e *echoEngine) Generate(ctx context.Context, req *backend.Request, emit func(*backend.Output) error) error {
	rc, _ := runtime.FromContext(ctx)
	e.mu.Lock()
	e.ids = append(e.ids, rc.ID())
	e.mu.Unlock()
	for _, id := range e.texts[len(req.TokenIDs)] {
		if rc.IsStopped() {
			e.mu.Lock()
			e.stops++
			e.mu.Unlock()
			return emit(backend.Cancelled())
		}
		if err := emit(backend.Tokens(id)); err != nil {
			return err
		}
	}
	return emit(backend.Length())
}

func TestCompletionFanOut(t *testing.T) {
	m := demoModel(t)
	p0 := encodeIDs(t, m, "a")
	p1 := encodeIDs(t, m, "a longer prompt")
	eng := &echoEngine{texts: map[int][]uint32{
		len(p0): encodeIDs(t, m, "first answer"),
		len(p1): encodeIDs(t, m, "second answer STOP more"),
	}}
	req := decodeCompletion(t, `{"model":"demo","prompt":["a","a longer prompt"],"stream":true,"stream_options":{"include_usage":true},"stop":" STOP"}`)
	rc := runtime.NewContext(context.Background(), "cmp")
	defer rc.Release()
	texts := map[int]string{}
	finish := map[int]string{}
	var usage *openai.Usage
	err := m.Complete(rc, "cmp", req, eng, func(ev Event) error {
		c := ev.Data.(*openai.Completion)
		if c.ID != "cmpl-cmp" || c.Object != "text_completion" {
			t.Errorf("chunk id %q object %q", c.ID, c.Object)
		}
		if c.Usage != nil {
			usage = c.Usage
		}
		for _, ch := range c.Choices {
			texts[ch.Index] += ch.Text
			if ch.FinishReason != nil {
				finish[ch.Index] = *ch.FinishReason
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if texts[0] != "first answer" || texts[1] != "second answer" {
		t.Errorf("texts %v", texts)
	}
	if finish[0] != "length" || finish[1] != "stop" {
		t.Errorf("finish reasons %v", finish)
	}
	sort.Strings(eng.ids)
	if strings.Join(eng.ids, ",") != "cmp-0,cmp-1" {
		t.Errorf("sub-request ids %v, want cmp-0 and cmp-1", eng.ids)
	}
	if rc.IsStopped() {
		t.Error("a stop string in one prompt stopped the whole request")
	}
	second := len(encodeIDs(t, m, "second answer STOP"))
	wantCompletion := len(eng.texts[len(p0)]) + second
	if usage == nil || usage.PromptTokens != len(p0)+len(p1) || usage.CompletionTokens != wantCompletion {
		t.Errorf("usage %+v, want prompt %d completion %d", usage, len(p0)+len(p1), wantCompletion)
	}
}

func TestCompletionUnaryAndChoiceIndex(t *testing.T) {
	m := demoModel(t)
	p := encodeIDs(t, m, "x")
	eng := &echoEngine{texts: map[int][]uint32{len(p): encodeIDs(t, m, "done")}}
	resp, err := m.CompleteUnary(context.Background(), "u", decodeCompletion(t, `{"model":"demo","prompt":["x","x","x"]}`), eng)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Choices) != 3 {
		t.Fatalf("choices %+v", resp.Choices)
	}
	for i, ch := range resp.Choices {
		if ch.Index != i || ch.Text != "done" || *ch.FinishReason != "length" {
			t.Errorf("choice %d: %+v", i, ch)
		}
	}
	if resp.Usage == nil || resp.Usage.CompletionTokens != 3*len(eng.texts[len(p)]) {
		t.Errorf("usage %+v", resp.Usage)
	}
}

func TestCompletionFanOutFailureKillsSiblings(t *testing.T) {
	m := demoModel(t)
	eng := backend.GeneratorFunc(func(ctx context.Context, req *backend.Request, emit func(*backend.Output) error) error {
		rc, _ := runtime.FromContext(ctx)
		if strings.HasSuffix(rc.ID(), "-1") {
			return runtime.NewError(runtime.TypeCannotConnect, "worker gone")
		}
		<-rc.Killed() // the sibling hangs until killed
		return runtime.ErrKilled
	})
	err := m.Complete(context.Background(), "f", decodeCompletion(t, `{"model":"demo","prompt":["a","b"]}`), eng, func(Event) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "worker gone") {
		t.Fatalf("got %v, want the root cause (worker gone)", err)
	}
}
