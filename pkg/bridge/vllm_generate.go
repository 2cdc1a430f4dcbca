package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/bridge/vllmwire"
)

// How a vLLM engine is driven (Config.VLLMAPI).
const (
	// VLLMAPIAuto uses /inference/v1/generate when the engine streams it
	// (probed at Start), else /v1/completions.
	VLLMAPIAuto = "auto"
	// VLLMAPIGenerate requires /inference/v1/generate: Start fails when
	// the engine does not stream it.
	VLLMAPIGenerate = "generate"
	// VLLMAPICompletions uses /v1/completions only.
	VLLMAPICompletions = "completions"
)

// probeTimeout bounds Start's probe of /inference/v1/generate (a
// freshly loaded engine's first step may be slow).
const probeTimeout = 30 * time.Second

// vllmGenerateCall builds req's call of /inference/v1/generate
// (vllmwire.GeneratePath). Streaming arrived after the endpoint itself:
// Start probes that it streams (vllmUseGenerate).
func vllmGenerateCall(req *backend.Request, info engineInfo, structured *vllmwire.StructuredOutputs, header http.Header) engineCall {
	so, sc := req.SamplingOptions, req.StopConditions
	body := vllmwire.GenerateRequest{
		Model:         vllmModel(req, info),
		TokenIDs:      req.TokenIDs,
		Stream:        true,
		StreamOptions: &vllmwire.StreamOptions{IncludeUsage: true},
		SamplingParams: vllmwire.SamplingParams{
			N:                   so.N,
			PresencePenalty:     so.PresencePenalty,
			FrequencyPenalty:    so.FrequencyPenalty,
			RepetitionPenalty:   so.RepetitionPenalty,
			Temperature:         so.Temperature,
			TopP:                so.TopP,
			TopK:                so.TopK,
			MinP:                so.MinP,
			Seed:                so.Seed,
			StopTokenIDs:        stopTokenIDs(req),
			IgnoreEOS:           sc.IgnoreEOS,
			MaxTokens:           maxTokens(req, info),
			MinTokens:           sc.MinTokens,
			Logprobs:            req.OutputOptions.Logprobs,
			StructuredOutputs:   structured,
			ThinkingTokenBudget: sc.MaxThinkingTokens,
		},
	}
	if r := req.Routing; r != nil {
		body.CacheSalt, body.Priority = r.CacheSalt, r.Priority
	}
	return engineCall{path: vllmwire.GeneratePath, body: body, header: header}
}

// vllmUseGenerate decides, at Start, whether requests go to
// /inference/v1/generate: per Config.VLLMAPI, and in auto mode when a
// probe (one token, streamed) shows the engine streams it. Versions
// without the endpoint answer 404; those from before its streaming answer
// one JSON body.
func vllmUseGenerate(ctx context.Context, e *Engine, model string) (bool, error) {
	if e.cfg.VLLMAPI == VLLMAPICompletions {
		return false, nil
	}
	err := vllmProbeGenerate(ctx, e, model)
	switch {
	case err == nil:
		e.log.Info("bridge: the vllm engine streams "+vllmwire.GeneratePath+": requests go there", "url", e.base)
		return true, nil
	case ctx.Err() != nil:
		return false, context.Cause(ctx)
	case e.cfg.VLLMAPI == VLLMAPIGenerate:
		return false, fmt.Errorf("the engine does not stream %s (vLLM API %q asked for it): %w", vllmwire.GeneratePath, VLLMAPIGenerate, err)
	}
	e.log.Info("bridge: the vllm engine does not stream "+vllmwire.GeneratePath+": requests go to /v1/completions", "url", e.base, "why", err.Error())
	return false, nil
}

// vllmProbeGenerate asks /inference/v1/generate for one streamed token
// and returns nil when the answer is a stream of token-id chunks.
func vllmProbeGenerate(ctx context.Context, e *Engine, model string) error {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	body := vllmwire.GenerateRequest{Model: model, TokenIDs: []uint32{0}, Stream: true,
		SamplingParams: vllmwire.SamplingParams{MaxTokens: backend.Ptr[uint32](1)}}
	resp, err := e.post(ctx, vllmwire.GeneratePath, body, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		return fmt.Errorf("it answered %q, not a stream", ct)
	}
	field, data, err := newSSEReader(resp.Body).next()
	if err != nil {
		return fmt.Errorf("its stream: %w", err)
	}
	var c vllmChunk
	if field != "data" || json.Unmarshal(data, &c) != nil || len(c.Choices) == 0 || c.Choices[0].TokenIDs == nil {
		return errors.New("its stream has no token_ids")
	}
	return nil
}

// vllmChatLogprobs sets o's logprobs from /inference/v1/generate's
// ChatCompletionLogProbs: {content: [{token: "token_id:<id>", logprob,
// top_logprobs: [{token, logprob}]}]}, one entry per token.
func vllmChatLogprobs(o *backend.Output, raw json.RawMessage) error {
	var lp vllmwire.ChatCompletionLogProbs
	if err := json.Unmarshal(raw, &lp); err != nil {
		return fmt.Errorf("bridge: %w: the vllm engine sent malformed logprobs: %v", backend.ErrStreamIncomplete, err)
	}
	all := make([][]topLogprob, 0, len(o.TokenIDs))
	for i := range o.TokenIDs {
		v := 0.0
		var alts []topLogprob
		if i < len(lp.Content) {
			c := lp.Content[i]
			v = c.Logprob // 0 when null
			for _, t := range c.TopLogprobs {
				if id, ok := tokenIDOf(t.Token); ok {
					alts = append(alts, topLogprob{TokenID: id, Logprob: max(t.Logprob, -9999)})
				}
			}
		}
		if math.IsInf(v, -1) {
			v = -9999
		}
		o.LogProbs = append(o.LogProbs, v)
		sort.SliceStable(alts, func(a, b int) bool { return alts[a].Logprob > alts[b].Logprob })
		for r := range alts {
			alts[r].Rank = r + 1
		}
		all = append(all, alts)
	}
	b, err := json.Marshal(all)
	if err != nil {
		return err
	}
	o.TopLogprobs = b
	return nil
}
