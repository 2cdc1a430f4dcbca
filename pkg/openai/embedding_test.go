package openai

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDecodeEmbeddingInputShapes(t *testing.T) {
	s := func(v string) *string { return &v }
	for _, tc := range []struct {
		input string
		want  EmbeddingInput
		count int
	}{
		{`"hello"`, EmbeddingInput{Text: s("hello")}, 1},
		{`["a", "b", "c"]`, EmbeddingInput{Texts: []string{"a", "b", "c"}}, 3},
		{`[1, 2, 3]`, EmbeddingInput{Tokens: []uint32{1, 2, 3}}, 1},
		{`[[1, 2], [3]]`, EmbeddingInput{TokenSet: [][]uint32{{1, 2}, {3}}}, 2},
	} {
		r, err := DecodeEmbedding([]byte(`{"model":"m","input":`+tc.input+`}`), DecodeOptions{})
		if err != nil {
			t.Errorf("input %s: %v", tc.input, err)
			continue
		}
		if diff := cmp.Diff(tc.want, r.Input); diff != "" {
			t.Errorf("input %s (-want +got):\n%s", tc.input, diff)
		}
		if n := r.Input.Count(); n != tc.count {
			t.Errorf("input %s: %d inputs, want %d", tc.input, n, tc.count)
		}
		back, _ := json.Marshal(r.Input)
		if strings.ReplaceAll(tc.input, " ", "") != string(back) {
			t.Errorf("input %s encodes back as %s", tc.input, back)
		}
	}
}

func TestDecodeEmbeddingFields(t *testing.T) {
	body := `{"model":"m","input":"x","encoding_format":"base64","dimensions":8,"user":"u","add_special_tokens":false,` +
		`"nvext":{"backend_instance_id":7}}`
	r, err := DecodeEmbedding([]byte(body), DecodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r.EncodingFormat != EncodingBase64 || *r.Dimensions != 8 || r.User != "u" || *r.AddSpecialTokens || *r.NvExt.BackendInstanceID != 7 {
		t.Errorf("decoded %+v", r)
	}
}

func TestDecodeEmbeddingRefusals(t *testing.T) {
	many := "[" + strings.TrimSuffix(strings.Repeat(`"x",`, MaxEmbeddingInputs+1), ",") + "]"
	for _, tc := range []struct {
		name, body string
		param      string
		contains   string
	}{
		{"no model", `{"input":"x"}`, "model", "model must not be empty"},
		{"no input", `{"model":"m"}`, "input", "input is required"},
		{"null input", `{"model":"m","input":null}`, "input", "input is required"},
		{"empty string", `{"model":"m","input":""}`, "input", "must not be an empty string"},
		{"empty list", `{"model":"m","input":[]}`, "input", "input must not be empty"},
		{"an empty string in the list", `{"model":"m","input":["a",""]}`, "input[1]", "input[1] must not be an empty string"},
		{"an empty token list", `{"model":"m","input":[[1],[]]}`, "input[1]", "input[1] must not be an empty list"},
		{"too many inputs", `{"model":"m","input":` + many + `}`, "input", fmt.Sprintf("at most %d", MaxEmbeddingInputs)},
		{"mixed list", `{"model":"m","input":["a",1]}`, "input", "expected a string, an array of strings"},
		{"negative token id", `{"model":"m","input":[1,-2]}`, "input", "expected a string"},
		{"an object", `{"model":"m","input":{"text":"a"}}`, "input", "expected a string"},
		{"unknown encoding", `{"model":"m","input":"x","encoding_format":"int8"}`, "encoding_format", `encoding_format must be "float" or "base64"`},
		{"zero dimensions", `{"model":"m","input":"x","dimensions":0}`, "dimensions", "dimensions must be at least 1"},
		{"fractional dimensions", `{"model":"m","input":"x","dimensions":1.5}`, "dimensions", "expected an integer"},
		{"unknown field", `{"model":"m","input":"x","temperature":1}`, "temperature", "Unsupported parameter(s): `temperature`"},
		{"unknown nvext field", `{"model":"m","input":"x","nvext":{"bogus":1}}`, "nvext.bogus", "nvext: unknown field `bogus`"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeEmbedding([]byte(tc.body), DecodeOptions{})
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("error %v (%T), want a *ValidationError", err, err)
			}
			if ve.Param != tc.param || !strings.Contains(ve.Message, tc.contains) {
				t.Errorf("param %q message %q; want param %q and a message containing %q", ve.Param, ve.Message, tc.param, tc.contains)
			}
		})
	}
	if _, err := DecodeEmbedding([]byte(`{"model":"m","input":"x","temperature":1}`), DecodeOptions{AllowUnknownFields: true}); err != nil {
		t.Errorf("an unknown field with AllowUnknownFields: %v", err)
	}
}

func TestEmbeddingVectorJSON(t *testing.T) {
	v := []float64{0.6, -0.8, 1.0 / 3}
	f, _ := json.Marshal(NewEmbeddingVector(v, EncodingFloat))
	if string(f) != "[0.6,-0.8,0.33333334]" {
		t.Errorf("float: %s", f)
	}
	b, _ := json.Marshal(NewEmbeddingVector(v, EncodingBase64))
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatalf("base64: %s is not a JSON string", b)
	}
	raw, err := base64.StdEncoding.DecodeString(s)
	if err != nil || len(raw) != 12 {
		t.Fatalf("base64 %q: %d bytes, %v; want 12", s, len(raw), err)
	}
	for i, x := range v {
		if got := math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:])); got != float32(x) {
			t.Errorf("base64 value %d: %v, want %v", i, got, float32(x))
		}
	}
	for _, enc := range [][]byte{f, b} {
		var back EmbeddingVector
		if err := json.Unmarshal(enc, &back); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(NewEmbeddingVector(v, "").Values, back.Values); diff != "" {
			t.Errorf("%s decodes to other values (-want +got):\n%s", enc, diff)
		}
	}
	if e, _ := json.Marshal(EmbeddingVector{}); string(e) != "[]" {
		t.Errorf("an empty vector: %s", e)
	}
}
