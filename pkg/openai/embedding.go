package openai

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strconv"
	"strings"
	"sync"
)

// MaxEmbeddingInputs is the most inputs one embeddings request may hold
// (OpenAI's limit).
const MaxEmbeddingInputs = 2048

// Embedding encoding formats (EmbeddingRequest.EncodingFormat).
const (
	EncodingFloat  = "float"
	EncodingBase64 = "base64"
)

// Object types of an embeddings response.
const (
	ObjectList      = "list"
	ObjectEmbedding = "embedding"
)

// EmbeddingRequest is the body of POST /v1/embeddings.
type EmbeddingRequest struct {
	Model string         `json:"model"`
	Input EmbeddingInput `json:"input"`
	// EncodingFormat is "float" (the default) or "base64".
	EncodingFormat string `json:"encoding_format,omitempty"`
	// Dimensions asks for embeddings of this many dimensions (>= 1, at
	// most the model's).
	Dimensions *int   `json:"dimensions,omitempty"`
	User       string `json:"user,omitempty"`
	// AddSpecialTokens adds the tokenizer's special tokens (BOS and the
	// like) to text inputs; default true, as the reference system and
	// vLLM do. Token-id inputs are taken as given.
	AddSpecialTokens *bool  `json:"add_special_tokens,omitempty"`
	NvExt            *NvExt `json:"nvext,omitempty"`
}

// EmbeddingInput is the input of an embeddings request: a string, a list
// of strings, a list of token ids, or a list of token-id lists. Exactly
// one field is set.
type EmbeddingInput struct {
	Text     *string
	Texts    []string
	Tokens   []uint32
	TokenSet [][]uint32
}

// Count returns how many inputs it holds (one embedding each).
func (in EmbeddingInput) Count() int {
	switch {
	case in.Text != nil, in.Tokens != nil:
		return 1
	case in.Texts != nil:
		return len(in.Texts)
	}
	return len(in.TokenSet)
}

// IsZero reports whether no input was given.
func (in EmbeddingInput) IsZero() bool {
	return in.Text == nil && in.Texts == nil && in.Tokens == nil && in.TokenSet == nil
}

// UnmarshalJSON accepts the four input forms. An empty array is an empty
// list of strings.
func (in *EmbeddingInput) UnmarshalJSON(b []byte) error {
	*in = EmbeddingInput{}
	b = bytes.TrimSpace(b)
	if bytes.Equal(b, []byte("null")) {
		return nil
	}
	if nullInside(b) {
		return &fieldError{field: "input", msg: "null is not a string or a token id"}
	}
	var s string
	if json.Unmarshal(b, &s) == nil {
		in.Text = &s
		return nil
	}
	var ss []string
	if json.Unmarshal(b, &ss) == nil {
		if ss == nil {
			ss = []string{}
		}
		in.Texts = ss
		return nil
	}
	var ids []uint32
	if json.Unmarshal(b, &ids) == nil {
		in.Tokens = ids
		return nil
	}
	var set [][]uint32
	if json.Unmarshal(b, &set) == nil {
		in.TokenSet = set
		return nil
	}
	return &fieldError{field: "input", msg: "expected a string, an array of strings, an array of token ids (non-negative integers), or an array of token-id arrays"}
}

// MarshalJSON writes the form that was given.
func (in EmbeddingInput) MarshalJSON() ([]byte, error) {
	switch {
	case in.Text != nil:
		return json.Marshal(*in.Text)
	case in.Texts != nil:
		return json.Marshal(in.Texts)
	case in.Tokens != nil:
		return json.Marshal(in.Tokens)
	}
	return json.Marshal(in.TokenSet)
}

var embeddingInfo = sync.OnceValue(func() *typeInfo { return newTypeInfo(reflect.TypeFor[EmbeddingRequest]()) })

// DecodeEmbedding decodes and validates an embeddings body. Every failure
// is a *ValidationError.
func DecodeEmbedding(body []byte, opts DecodeOptions) (*EmbeddingRequest, error) {
	var r EmbeddingRequest
	if err := decodeObject(body, opts, embeddingInfo(), &r); err != nil {
		return nil, err
	}
	if err := r.Validate(); err != nil {
		return nil, err
	}
	return &r, nil
}

// Validate checks the request's required fields and limits: a model, an
// input of 1 to MaxEmbeddingInputs non-empty items, a known encoding
// format, dimensions >= 1. Every failure is a *ValidationError. (The
// context length, the vocabulary and the model's dimensions are the
// preprocessor's and the engine's to check.)
func (r *EmbeddingRequest) Validate() error {
	if strings.TrimSpace(r.Model) == "" {
		return invalidParam("model", "model must not be empty")
	}
	in := r.Input
	if in.IsZero() {
		return invalidParam("input", "input is required")
	}
	n := in.Count()
	if n == 0 {
		return invalidParam("input", "input must not be empty")
	}
	if n > MaxEmbeddingInputs {
		return invalidParam("input", "input has %d items, at most %d are allowed", n, MaxEmbeddingInputs)
	}
	switch {
	case in.Text != nil && *in.Text == "":
		return invalidParam("input", "input must not be an empty string")
	case in.Tokens != nil && len(in.Tokens) == 0:
		return invalidParam("input", "input must not be empty")
	}
	for i, s := range in.Texts {
		if s == "" {
			return invalidParam(InputParam(i, true), "input[%d] must not be an empty string", i)
		}
	}
	for i, ids := range in.TokenSet {
		if len(ids) == 0 {
			return invalidParam(InputParam(i, true), "input[%d] must not be an empty list of token ids", i)
		}
	}
	switch r.EncodingFormat {
	case "", EncodingFloat, EncodingBase64:
	default:
		return invalidParam("encoding_format", "encoding_format must be %q or %q, got %q", EncodingFloat, EncodingBase64, r.EncodingFormat)
	}
	if r.Dimensions != nil && *r.Dimensions < 1 {
		return invalidParam("dimensions", "dimensions must be at least 1, got %d", *r.Dimensions)
	}
	return nil
}

// InputParam is the error param of item i of an embeddings input:
// "input[i]" when the input is a list of items (strings or token-id
// lists), else "input".
func InputParam(i int, list bool) string {
	if !list {
		return "input"
	}
	return "input[" + strconv.Itoa(i) + "]"
}

// EmbeddingResponse is the body of an embeddings answer.
type EmbeddingResponse struct {
	Object string          `json:"object"` // "list"
	Data   []EmbeddingData `json:"data"`
	Model  string          `json:"model"`
	Usage  EmbeddingUsage  `json:"usage"`
}

// EmbeddingData is one input's embedding.
type EmbeddingData struct {
	Object    string          `json:"object"` // "embedding"
	Embedding EmbeddingVector `json:"embedding"`
	Index     int             `json:"index"`
}

// EmbeddingUsage counts an embeddings request's input tokens.
type EmbeddingUsage struct {
	PromptTokens int `json:"prompt_tokens"`
	TotalTokens  int `json:"total_tokens"`
}

// EmbeddingVector is an embedding as the client asked for it: in JSON a
// list of numbers (float32 precision, as OpenAI's), or with Base64 a
// string holding the little-endian float32 values, base64-encoded.
type EmbeddingVector struct {
	Values []float32
	Base64 bool
}

// NewEmbeddingVector returns v at float32 precision, in format
// (EncodingFloat or "", or EncodingBase64).
func NewEmbeddingVector(v []float64, format string) EmbeddingVector {
	out := EmbeddingVector{Values: make([]float32, len(v)), Base64: format == EncodingBase64}
	for i, x := range v {
		out.Values[i] = float32(x)
	}
	return out
}

// MarshalJSON writes the numbers, or the base64 string.
func (e EmbeddingVector) MarshalJSON() ([]byte, error) {
	if e.Base64 {
		b := make([]byte, 4*len(e.Values))
		for i, x := range e.Values {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
		}
		return json.Marshal(base64.StdEncoding.EncodeToString(b))
	}
	if e.Values == nil {
		return []byte("[]"), nil
	}
	return json.Marshal(e.Values)
}

// UnmarshalJSON reads either form.
func (e *EmbeddingVector) UnmarshalJSON(b []byte) error {
	*e = EmbeddingVector{}
	var s string
	if json.Unmarshal(b, &s) == nil {
		raw, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return err
		}
		if len(raw)%4 != 0 {
			return errors.New("openai: a base64 embedding's length is not a multiple of 4 bytes")
		}
		e.Base64, e.Values = true, make([]float32, len(raw)/4)
		for i := range e.Values {
			e.Values[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
		}
		return nil
	}
	return json.Unmarshal(b, &e.Values)
}
