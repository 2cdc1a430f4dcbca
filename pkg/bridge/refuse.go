package bridge

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/dynamo-go/dynamo/pkg/backend"
)

// refuse returns the error for what a dialect cannot do.
func refuse(dialect, format string, args ...any) error {
	return fmt.Errorf("bridge: %w: the %s engine cannot serve %s", backend.ErrInvalidArgument, dialect, fmt.Sprintf(format, args...))
}

// present reports whether an optional JSON field holds something.
func present(raw json.RawMessage) bool {
	s := strings.TrimSpace(string(raw))
	return s != "" && s != "null" && s != "{}" && s != "[]"
}

// refuseCommon refuses what no engine serves through the bridge: a
// request's multimodal data (the engines take it as images or embeddings,
// which the token-id prompt cannot carry), engine extra args, and the
// disaggregated halves (a prefill result or bootstrap info: cmd/worker
// serves aggregated engines only).
func refuseCommon(dialect string, req *backend.Request) error {
	switch {
	case present(req.MultiModalData):
		return refuse(dialect, "multimodal data through the bridge (token-id prompts only)")
	case present(req.ExtraArgs):
		return refuse(dialect, "extra_args (no engine parameter takes them through the bridge)")
	case req.PrefillResult != nil || req.BootstrapInfo != nil:
		return refuse(dialect, "a disaggregated request (prefill_result / bootstrap_info): the bridge serves aggregated engines")
	}
	return nil
}

// guided is sampling_options.guided_decoding as the frontend sends it.
type guided struct {
	JSON              json.RawMessage `json:"json,omitempty"`
	Regex             string          `json:"regex,omitempty"`
	Choice            []string        `json:"choice,omitempty"`
	Grammar           string          `json:"grammar,omitempty"`
	Backend           string          `json:"backend,omitempty"`
	WhitespacePattern string          `json:"whitespace_pattern,omitempty"`
	StructuralTag     json.RawMessage `json:"structural_tag,omitempty"`
}

// guidedOf decodes the request's guided decoding; nil for none. It
// refuses what no engine takes per request: more than one kind of
// constraint, and a backend hint (vLLM and SGLang choose the grammar
// backend for the whole server; llama.cpp has one).
func guidedOf(dialect string, req *backend.Request) (*guided, error) {
	raw := req.SamplingOptions.GuidedDecoding
	if !present(raw) {
		return nil, nil
	}
	var g guided
	if err := json.Unmarshal(raw, &g); err != nil {
		return nil, fmt.Errorf("bridge: %w: guided_decoding: %v", backend.ErrInvalidArgument, err)
	}
	var kinds []string
	for _, k := range []struct {
		name string
		set  bool
	}{{"json", present(g.JSON)}, {"regex", g.Regex != ""}, {"choice", len(g.Choice) > 0}, {"grammar", g.Grammar != ""}, {"structural_tag", present(g.StructuralTag)}} {
		if k.set {
			kinds = append(kinds, k.name)
		}
	}
	switch {
	case len(kinds) > 1:
		return nil, refuse(dialect, "guided decoding of several kinds at once (%s): give one", strings.Join(kinds, ", "))
	case g.Backend != "":
		return nil, refuse(dialect, "a per-request guided decoding backend (%q): the engine's server configuration chooses it", g.Backend)
	case len(kinds) == 0 && g.WhitespacePattern != "":
		return nil, fmt.Errorf("bridge: %w: guided_decoding: whitespace_pattern without a JSON schema", backend.ErrInvalidArgument)
	case len(kinds) == 0:
		return nil, nil
	case g.WhitespacePattern != "" && !present(g.JSON):
		return nil, fmt.Errorf("bridge: %w: guided_decoding: whitespace_pattern applies to guided JSON only", backend.ErrInvalidArgument)
	}
	return &g, nil
}

// schemaText returns a JSON schema as text: a JSON string holding the
// schema is unquoted, an object is taken as is.
func schemaText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

// refuseRouting refuses the routing hints a dialect has no field for;
// has names those it has (of "dp_rank", "cache_salt", "priority",
// "lora_name").
func refuseRouting(dialect string, req *backend.Request, has ...string) error {
	r := req.Routing
	if r == nil {
		return nil
	}
	ok := func(name string) bool {
		for _, h := range has {
			if h == name {
				return true
			}
		}
		return false
	}
	switch {
	case r.DPRank != nil && *r.DPRank > 0 && !ok("dp_rank"):
		return refuse(dialect, "data-parallel rank %d (it has one rank)", *r.DPRank)
	case r.CacheSalt != nil && *r.CacheSalt != "" && !ok("cache_salt"):
		return refuse(dialect, "cache_salt (no per-request cache isolation)")
	case r.Priority != nil && *r.Priority != 0 && !ok("priority"):
		return refuse(dialect, "priority %d (no request priorities)", *r.Priority)
	case r.LoraName != nil && *r.LoraName != "" && !ok("lora_name"):
		return refuse(dialect, "LoRA adapter %q by name", *r.LoraName)
	}
	return nil
}
