package modelcard

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// ModelType is the set of capabilities (OpenAI endpoints) a model serves, as
// the reference system's bitflags. In JSON it is the flag names joined by
// " | " ("Chat | Completions"); decoding also accepts a list of names
// (["chat", "completions"]), the legacy single names ("Completion",
// "Backend" = Chat|Completions) and a bare number.
type ModelType uint32

// Model type flags (bit values as the reference system).
const (
	ModelChat        ModelType = 1 << iota // /v1/chat/completions
	ModelCompletions                       // /v1/completions
	ModelEmbedding                         // /v1/embeddings
	ModelTensorBased                       // tensor in, tensor out
	ModelPrefill                           // a prefill-only worker pool for disaggregation
	ModelImages                            // image generation
	ModelAudios                            // audio generation
	ModelVideos                            // video generation
)

var modelTypeNames = []struct {
	t    ModelType
	name string
}{
	{ModelChat, "Chat"},
	{ModelCompletions, "Completions"},
	{ModelEmbedding, "Embedding"},
	{ModelTensorBased, "TensorBased"},
	{ModelPrefill, "Prefill"},
	{ModelImages, "Images"},
	{ModelAudios, "Audios"},
	{ModelVideos, "Videos"},
}

// Has reports whether every flag of f is set in t.
func (t ModelType) Has(f ModelType) bool { return f != 0 && t&f == f }

// String returns the flag names joined by " | ", or "" for no flags.
// Unknown bits are rendered as a hex number.
func (t ModelType) String() string {
	var parts []string
	rest := t
	for _, n := range modelTypeNames {
		if t&n.t != 0 {
			parts = append(parts, n.name)
			rest &^= n.t
		}
	}
	if rest != 0 {
		parts = append(parts, "0x"+strconv.FormatUint(uint64(rest), 16))
	}
	return strings.Join(parts, " | ")
}

// ParseModelType parses flag names separated by "|" or "," (case-insensitive,
// "completion" and "backend" accepted for the legacy enum).
func ParseModelType(s string) (ModelType, error) {
	var t ModelType
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == '|' || r == ',' }) {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		v, err := parseModelTypeName(f)
		if err != nil {
			return 0, err
		}
		t |= v
	}
	return t, nil
}

func parseModelTypeName(f string) (ModelType, error) {
	switch strings.ToLower(f) {
	case "completion":
		return ModelCompletions, nil
	case "backend":
		return ModelChat | ModelCompletions, nil
	case "embeddings":
		return ModelEmbedding, nil
	case "tensor":
		return ModelTensorBased, nil
	}
	for _, n := range modelTypeNames {
		if strings.EqualFold(f, n.name) {
			return n.t, nil
		}
	}
	if strings.HasPrefix(f, "0x") {
		if v, err := strconv.ParseUint(f[2:], 16, 32); err == nil {
			return ModelType(v), nil
		}
	}
	return 0, fmt.Errorf("%w: unknown model type %q", ErrInvalid, f)
}

// MarshalJSON encodes the flag names joined by " | ".
func (t ModelType) MarshalJSON() ([]byte, error) { return json.Marshal(t.String()) }

// UnmarshalJSON accepts "Chat | Completions", ["Chat","Completions"] or a number.
func (t *ModelType) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		v, err := ParseModelType(s)
		*t = v
		return err
	}
	var list []string
	if err := json.Unmarshal(b, &list); err == nil {
		v, err := ParseModelType(strings.Join(list, "|"))
		*t = v
		return err
	}
	var n uint32
	if err := json.Unmarshal(b, &n); err == nil {
		*t = ModelType(n)
		return nil
	}
	return fmt.Errorf("%w: model_type %s", ErrInvalid, b)
}

// ModelInput says what the worker accepts, and so what the frontend does
// before forwarding a request.
type ModelInput string

// Model inputs (JSON values as the reference system).
const (
	// InputTokens: the frontend templates and tokenizes (the standard case).
	InputTokens ModelInput = "Tokens"
	// InputText: the worker templates itself; requests are forwarded as is.
	InputText ModelInput = "Text"
	// InputTensor: tensor-based models.
	InputTensor ModelInput = "Tensor"
)

// WorkerType is the worker's role in (dis)aggregated serving; the reference
// system's worker_type. In JSON it is "Aggregated", "Prefill", "Decode" or
// "Encode"; decoding is case-insensitive and accepts "agg".
type WorkerType string

// Worker types.
const (
	WorkerAggregated WorkerType = "Aggregated"
	WorkerPrefill    WorkerType = "Prefill"
	WorkerDecode     WorkerType = "Decode"
	WorkerEncode     WorkerType = "Encode"
)

// ParseWorkerType parses a disaggregation mode: "aggregated" (or "agg", or
// ""), "prefill", "decode", "encode", case-insensitively.
func ParseWorkerType(s string) (WorkerType, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "agg", "aggregated":
		return WorkerAggregated, nil
	case "prefill":
		return WorkerPrefill, nil
	case "decode":
		return WorkerDecode, nil
	case "encode":
		return WorkerEncode, nil
	}
	return "", fmt.Errorf("%w: unknown disaggregation mode %q (want aggregated, prefill or decode)", ErrInvalid, s)
}

// UnmarshalJSON accepts any case and "agg"; a missing value is Aggregated.
func (w *WorkerType) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("%w: worker_type %s", ErrInvalid, b)
	}
	v, err := ParseWorkerType(s)
	if err != nil {
		return err
	}
	*w = v
	return nil
}
