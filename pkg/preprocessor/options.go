package preprocessor

import (
	"encoding/json"
	"time"

	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/openai"
)

// options are the request fields chat and completions share, gathered so
// one function fills the engine request.
type options struct {
	maxTokens           *int64
	stop                *openai.Stop
	n, bestOf           *int
	seed                *int64
	temperature, topP   *float64
	presence, frequency *float64
	logprobs            *uint32
	guided              *openai.GuidedDecoding
}

// buildRequest fills the engine request for prompt ids (spec §3.4).
func (m *Model) buildRequest(ids []uint32, o options, ext *openai.CommonExt) *backend.Request {
	r := &backend.Request{
		Model:       m.card.DisplayName,
		TokenIDs:    ids,
		MDCSum:      m.card.MDCSum,
		Annotations: []string{},
		EOSTokenIDs: []uint32{},
	}
	sc := &r.StopConditions
	if o.maxTokens != nil {
		sc.MaxTokens = backend.Ptr(uint32(*o.maxTokens))
	}
	sc.MinTokens = ext.MinTokens
	ignoreEOS := ext.IgnoreEOS != nil && *ext.IgnoreEOS
	if ignoreEOS {
		sc.IgnoreEOS = backend.Ptr(true)
	} else {
		if o.stop != nil {
			sc.Stop = append(sc.Stop, o.stop.Strings...)
			sc.StopTokenIDs = append(sc.StopTokenIDs, o.stop.IDs...)
		}
		sc.StopTokenIDs = append(sc.StopTokenIDs, ext.StopTokenIDs...)
		sc.StopTokenIDsHidden = append([]uint32(nil), m.eos...)
		r.EOSTokenIDs = append(r.EOSTokenIDs, m.eos...)
	}

	so := &r.SamplingOptions
	so.N, so.BestOf, so.Seed = o.n, o.bestOf, o.seed
	so.Temperature, so.TopP, so.TopK, so.MinP = o.temperature, o.topP, ext.TopK, ext.MinP
	so.PresencePenalty, so.FrequencyPenalty = o.presence, o.frequency
	so.RepetitionPenalty = ext.RepetitionPenalty
	so.IncludeStopStrInOutput = ext.IncludeStopStrInOutput
	if o.guided != nil {
		so.GuidedDecoding, _ = json.Marshal(o.guided)
	}

	oo := &r.OutputOptions
	oo.Logprobs = o.logprobs
	oo.PromptLogprobs = ext.PromptLogprobs
	oo.SkipSpecialTokens = ext.SkipSpecialTokens
	oo.ReturnTokensAsTokenIDs = ext.ReturnTokensAsTokenIDs

	if nv := ext.NvExt; nv != nil {
		if nv.GreedSampling != nil && *nv.GreedSampling {
			so.Temperature, so.TopP = nil, nil
		}
		sc.MaxThinkingTokens = nv.MaxThinkingTokens
		r.Annotations = append(r.Annotations, nv.Annotations...)
		rt := backend.Routing{
			BackendInstanceID: nv.BackendInstanceID,
			PrefillWorkerID:   nv.PrefillWorkerID,
			DecodeWorkerID:    nv.DecodeWorkerID,
			DPRank:            nv.DPRank,
			PrefillDPRank:     nv.PrefillDPRank,
			CacheSalt:         nv.CacheSalt,
		}
		if sc, _ := nv.Session(); sc != nil { // checked when the request was decoded
			rt.Session = &backend.Session{ID: sc.SessionID, Close: sc.Action == openai.SessionClose}
			if sc.Timeout != nil {
				rt.Session.TTL = time.Duration(*sc.Timeout * float64(time.Second))
			}
		}
		if rt != (backend.Routing{}) {
			r.Routing = &rt
		}
	}
	if ext.CacheSalt != nil {
		if r.Routing == nil {
			r.Routing = &backend.Routing{}
		}
		if r.Routing.CacheSalt == nil {
			r.Routing.CacheSalt = ext.CacheSalt
		}
	}
	withPriorityJump(r, ext.NvExt)
	return r
}
