package backend_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/dynamo-go/dynamo/pkg/backend"
)

func TestOutputJSONFastPathMatchesEncodingJSON(t *testing.T) {
	outs := []*backend.Output{
		backend.Tokens(1),
		backend.Tokens(0, 4294967295, 17),
		backend.Tokens(),
		{TokenIDs: []uint32{}},
		backend.Length(5).WithUsage(3, 1),
		backend.Failed("boom"),
		{TokenIDs: []uint32{7}, Index: backend.Ptr(uint32(1))},
		{TokenIDs: []uint32{7}, LogProbs: []float64{-0.5}},
		backend.Stop().WithUsage(2, 0),
		{TokenIDs: []uint32{}, Embedding: []float64{0.6, -0.8}},
	}
	for _, o := range outs {
		got, err := backend.AppendOutputJSON(nil, o)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := json.Marshal(o)
		if string(got) != string(want) {
			t.Errorf("AppendOutputJSON %s, encoding/json %s", got, want)
		}
		var back, std backend.Output
		if err := backend.DecodeOutput(got, &back); err != nil {
			t.Fatal(err)
		}
		_ = json.Unmarshal(got, &std)
		if !reflect.DeepEqual(back, std) {
			t.Errorf("DecodeOutput(%s) = %+v, encoding/json %+v", got, back, std)
		}
	}
}

// outputShapes are outputs of the shapes DecodeOutput reads itself (the
// token ids; a terminal output's ids, finish reason, usage and index) and
// their edges, where encoding/json takes over.
var outputShapes = []string{
	`{"token_ids": [1, 2]}`, `{"token_ids":[1,,2]}`, `{"token_ids":[1,]}`, `{"token_ids":[-1]}`,
	`{"token_ids":[99999999999]}`, `{"token_ids":[1],"index":0}`, `{"token_ids":[1.5]}`, `{"token_ids":[00]}`, `{"token_ids":[1,01]}`,
	`{"token_ids":[0,10]}`, `{"token_ids":[],"finish_reason":"length","completion_usage":{"prompt_tokens":64,"completion_tokens":16,"total_tokens":80,"prompt_tokens_details":{"cached_tokens":32}}}`,
	`{"token_ids":[3],"finish_reason":"abort","index":2,"completion_usage":{"prompt_tokens":1,"completion_tokens":0,"total_tokens":1}}`,
	`{"token_ids":[],"finish_reason":{"error":"engine \"x\" failed\n"}}`,
	`{"finish_reason":{"error":null}}`, `{"finish_reason":{}}`, `{"finish_reason":{"error":"a","error":"b"}}`,
	`{"finish_reason":{"Error":"a"}}`, `{"finish_reason":{"error":"a","more":1}}`,
	`{"finish_reason":"bogus"}`, `{"finish_reason":""}`, `{"finish_reason":3}`, `{"finish_reason":null,"index":null}`,
	`{"finish_reason":"eos"}`, `{"finish_reason":"stop"}`, `{"finish_reason":"cancelled"}`, `{"finish_reason":"content_filter"}`,
	`{"completion_usage":null}`, `{"completion_usage":{"prompt_tokens":null,"prompt_tokens_details":null}}`,
	`{"completion_usage":{"prompt_tokens":1.5}}`, `{"completion_usage":{"prompt_tokens_details":{"cached_tokens":-1,"x":1}}}`,
	`{"completion_usage":{"prompt_tokens":1},"completion_usage":{"total_tokens":2}}`,
	`{"token_ids":[5],"worker_trace_link":{"trace_id":"4bf92f3577b34da6a3ce929d0e0e4736","span_id":"00f067aa0ba902b7"}}`,
	`{"worker_trace_link":null}`, `{"worker_trace_link":{"trace_id":null,"other":1}}`, `{"worker_trace_link":{"span_id":"a"},"worker_trace_link":{"trace_id":"b"}}`,
	`{"token_ids":[1],"text":"a"}`, `{"token_ids":[1]} x`, `{"token_ids":[1],}`,
}

func TestDecodeOutputIsJSONUnmarshal(t *testing.T) {
	for _, in := range outputShapes {
		var fast, std backend.Output
		errFast := backend.DecodeOutput([]byte(in), &fast)
		errStd := json.Unmarshal([]byte(in), &std)
		if (errFast == nil) != (errStd == nil) || !reflect.DeepEqual(fast, std) {
			t.Errorf("%s: fast %+v (%v), encoding/json %+v (%v)", in, fast, errFast, std, errStd)
		}
	}
}

// FuzzDecodeOutput: DecodeOutput is json.Unmarshal.
func FuzzDecodeOutput(f *testing.F) {
	for _, in := range outputShapes {
		f.Add(in)
	}
	f.Fuzz(func(t *testing.T, in string) {
		var fast, std backend.Output
		errFast := backend.DecodeOutput([]byte(in), &fast)
		errStd := json.Unmarshal([]byte(in), &std)
		if (errFast == nil) != (errStd == nil) || errFast == nil && !reflect.DeepEqual(fast, std) {
			t.Fatalf("%q: fast %+v (%v), encoding/json %+v (%v)", in, fast, errFast, std, errStd)
		}
	})
}

func BenchmarkOutputJSON(b *testing.B) {
	o := backend.Tokens(12345)
	b.Run("append+decode", func(b *testing.B) {
		var buf []byte
		var out backend.Output
		for i := 0; i < b.N; i++ {
			buf, _ = backend.AppendOutputJSON(buf[:0], o)
			_ = backend.DecodeOutput(buf, &out)
		}
	})
	b.Run("encoding/json", func(b *testing.B) {
		var out backend.Output
		for i := 0; i < b.N; i++ {
			buf, _ := json.Marshal(o)
			_ = json.Unmarshal(buf, &out)
		}
	})
}
