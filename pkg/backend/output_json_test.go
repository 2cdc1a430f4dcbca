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

func TestDecodeOutputFallsBackOnOtherShapes(t *testing.T) {
	for _, in := range []string{
		`{"token_ids": [1, 2]}`, `{"token_ids":[1,,2]}`, `{"token_ids":[1,]}`, `{"token_ids":[-1]}`,
		`{"token_ids":[99999999999]}`, `{"token_ids":[1],"index":0}`, `{"token_ids":[1.5]}`,
	} {
		var fast, std backend.Output
		errFast := backend.DecodeOutput([]byte(in), &fast)
		errStd := json.Unmarshal([]byte(in), &std)
		if (errFast == nil) != (errStd == nil) || !reflect.DeepEqual(fast, std) {
			t.Errorf("%s: fast %+v (%v), encoding/json %+v (%v)", in, fast, errFast, std, errStd)
		}
	}
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
