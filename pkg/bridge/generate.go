package bridge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"

	"github.com/dynamo-go/dynamo/pkg/backend"
)

// engineInfo is what Start learned of the engine.
type engineInfo struct {
	models        []servedModel // what it serves, the main model first
	served        string        // the name requests carry (a models id)
	contextLength int           // 0 unknown
	// generate: the vLLM engine streams its token-in/token-out endpoint
	// (/inference/v1/generate), used unless a request needs completions.
	generate bool
	// text asks for the engine's text on the outputs (Config.EngineText).
	text bool
	// native is what the engine reports of its model for a card without
	// the model's files (llama.cpp); nil if nothing.
	native *backend.NativeModel
	// llama is a llama.cpp engine's LoRA adapters and the names loaded
	// onto them (llamacpp_lora.go); nil when it lists none.
	llama *llamaLoras
}

// servedModel is one model an engine serves: the name requests carry, and
// the other names it is known by (the model path it was loaded from).
type servedModel struct {
	id      string
	aliases []string
}

// names returns the model's id and aliases.
func (m servedModel) names() []string { return append([]string{m.id}, m.aliases...) }

// engineCall is one engine request: its path, JSON body and headers.
type engineCall struct {
	path   string
	body   any
	header http.Header
}

// dialect is one engine's HTTP API.
type dialect interface {
	// health returns nil when the engine is ready to serve, else why not.
	health(ctx context.Context, e *Engine) error
	// info reads the served models and the context length, and what the
	// engine's API offers.
	info(ctx context.Context, e *Engine) (engineInfo, error)
	// request builds the engine request for req. What the engine cannot
	// do is an error wrapping ErrInvalidArgument.
	request(req *backend.Request, info engineInfo) (engineCall, error)
	// decoder returns the decoder of one request's streamed answer, sent
	// as call.
	decoder(req *backend.Request, info engineInfo, call engineCall) streamDecoder
}

// streamDecoder turns one engine stream into backend outputs.
type streamDecoder interface {
	// event handles one server-sent event (field is "data" or "error")
	// and returns the outputs to emit, and whether the stream is done.
	event(field string, data []byte) (outs []*backend.Output, done bool, err error)
	// end is called when the body ended without an end marker: the last
	// outputs if every choice had finished, else an error.
	end() ([]*backend.Output, error)
	// cancelled returns the terminal outputs of a stopped request: each
	// unfinished choice ends with FinishCancelled.
	cancelled() []*backend.Output
}

// Generate sends req to the engine and streams its answer to emit. A
// stop (backend.Stopped) closes the engine request, which aborts it, and
// ends the stream with FinishCancelled; a kill returns the context's
// cause.
func (e *Engine) Generate(ctx context.Context, req *backend.Request, emit func(*backend.Output) error) error {
	info, ok := e.startedInfo()
	if !ok {
		return fmt.Errorf("%w: %w", backend.ErrEngineShutdown, ErrNotStarted)
	}
	if req.Embedding != nil {
		return fmt.Errorf("bridge: %w: the bridge does not serve embeddings", backend.ErrInvalidArgument)
	}
	if len(req.TokenIDs) == 0 {
		return fmt.Errorf("bridge: %w: empty token_ids", backend.ErrInvalidArgument)
	}
	info.text = e.cfg.EngineText
	if err := refuseCommon(e.cfg.Dialect, req); err != nil {
		return err
	}
	call, err := e.d.request(req, info)
	if err != nil {
		return err
	}
	dec := e.d.decoder(req, info, call)
	emitAll := func(outs []*backend.Output) error {
		for _, o := range outs {
			if err := emit(o); err != nil {
				return err
			}
		}
		return nil
	}
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	if backend.IsStopped(ctx) {
		return emitAll(dec.cancelled())
	}

	// The engine request lives until Generate returns or the request is
	// stopped: closing it aborts the engine's work.
	hctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	stopped := backend.Stopped(ctx)
	wg.Go(func() {
		select {
		case <-stopped:
			cancel()
		case <-hctx.Done():
		}
	})
	// interrupted returns the end of a stopped or killed request, or
	// false if neither happened.
	interrupted := func() (bool, error) {
		if ctx.Err() != nil {
			return true, context.Cause(ctx)
		}
		if backend.IsStopped(ctx) {
			return true, emitAll(dec.cancelled())
		}
		return false, nil
	}

	resp, err := e.post(hctx, call.path, call.body, call.header)
	if err != nil {
		if ok, ierr := interrupted(); ok {
			return ierr
		}
		return err
	}
	defer resp.Body.Close()
	events := newSSEReader(resp.Body)
	for {
		field, data, err := events.next()
		if err != nil {
			if ok, ierr := interrupted(); ok {
				return ierr
			}
			if errors.Is(err, io.EOF) {
				outs, err := dec.end()
				if err != nil {
					return err
				}
				return emitAll(outs)
			}
			return fmt.Errorf("bridge: %w: the %s engine's stream broke: %v", backend.ErrStreamIncomplete, e.cfg.Dialect, err)
		}
		outs, done, err := dec.event(field, data)
		if eerr := emitAll(outs); eerr != nil {
			return eerr
		}
		if err != nil || done {
			return err
		}
	}
}

// incomplete is the error of a stream that ended before its end.
func incomplete(dialect string, what string) error {
	return fmt.Errorf("bridge: %w: the %s engine's stream ended %s", backend.ErrStreamIncomplete, dialect, what)
}

// usage sets a terminal output's usage: the prompt tokens the engine
// counted (else the request's), the tokens emitted, the cached prefix
// (-1: the engine did not say).
func usage(o *backend.Output, prompt, completion, cached int) *backend.Output {
	o.WithUsage(prompt, completion)
	if cached >= 0 {
		o.CompletionUsage.PromptTokensDetails = &backend.PromptDetail{CachedTokens: cached}
	}
	return o
}

// finishOfStop classifies a stop on token id: a request stop id (hidden
// or visible) is a stop, anything else (the model's EOS) an EOS.
func finishOfStop(req *backend.Request, id uint32) backend.FinishKind {
	sc := req.StopConditions
	for _, ids := range [][]uint32{sc.StopTokenIDs, sc.StopTokenIDsVisible} {
		for _, s := range ids {
			if s == id {
				return backend.FinishStop
			}
		}
	}
	return backend.FinishEOS
}

// stopTokenIDs returns the ids the engine must stop on: the request's
// stop ids, visible and hidden, without duplicates; the hidden ones (the
// model's EOS ids) only when EOS is not ignored.
func stopTokenIDs(req *backend.Request) []uint32 {
	sc := req.StopConditions
	lists := [][]uint32{sc.StopTokenIDs, sc.StopTokenIDsVisible}
	if sc.IgnoreEOS == nil || !*sc.IgnoreEOS {
		lists = append(lists, sc.StopTokenIDsHidden)
	}
	seen := map[uint32]bool{}
	var out []uint32
	for _, l := range lists {
		for _, id := range l {
			if !seen[id] {
				seen[id] = true
				out = append(out, id)
			}
		}
	}
	return out
}

// maxTokens returns the request's max_tokens, else the room the context
// leaves (nil when the context length is unknown).
func maxTokens(req *backend.Request, info engineInfo) *uint32 {
	if req.StopConditions.MaxTokens != nil {
		return req.StopConditions.MaxTokens
	}
	if room := info.contextLength - len(req.TokenIDs); info.contextLength > 0 && room > 0 {
		return backend.Ptr(uint32(room))
	}
	return nil
}

// topLogprob is one alternative of a token's top logprobs, in the shape
// the frontend reads (LLMEngineOutput.top_logprobs[i][j]).
type topLogprob struct {
	Rank    int     `json:"rank"`
	TokenID uint32  `json:"token_id"`
	Logprob float64 `json:"logprob"`
}
