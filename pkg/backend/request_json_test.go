package backend

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// MarshalJSON writes what encoding/json writes for the plain struct.
func TestRequestJSONIsEncodingJSONs(t *testing.T) {
	for _, r := range []*Request{
		{Model: "m", TokenIDs: []uint32{1, 2, 4294967295, 0}, EOSTokenIDs: []uint32{7}, Annotations: []string{`"token_ids":null`}},
		{Model: `"token_ids":null`, TokenIDs: []uint32{}},
		{Model: "m"},
		{Model: "m", TokenIDs: []uint32{5}, MigratedTokens: 1, ExtraArgs: json.RawMessage(`{"token_ids":[1]}`)},
	} {
		got, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		want, err := json.Marshal((*requestFields)(r))
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("MarshalJSON\n got %s\nwant %s", got, want)
		}
		var back Request
		if err := DecodeRequest(got, &back); err != nil {
			t.Fatal(err)
		}
		var slow Request
		if err := json.Unmarshal(want, (*requestFields)(&slow)); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(back, slow) {
			t.Errorf("DecodeRequest(%s) = %+v, encoding/json %+v", got, back, slow)
		}
	}
}

// DecodeRequest gives json.Unmarshal's request, or an error where it
// gives one, for every shape: the ids' fast path and the fallback.
func TestDecodeRequestIsJSONUnmarshal(t *testing.T) {
	for _, in := range []string{
		`{"model":"m","token_ids":[1,2,3]}`,
		` { "token_ids" : [ 1 , 2 ] , "model" : "m" } `,
		`{"token_ids":[]}`,
		`{"token_ids":null}`,
		`{"token_ids":[1,2],"token_ids":[3]}`,
		`{"Token_IDs":[9],"token_ids":[1]}`,
		`{"token_ids":[01]}`,
		`{"token_ids":[-1]}`,
		`{"token_ids":[1.5]}`,
		`{"token_ids":[1e3]}`,
		`{"token_ids":[4294967296]}`,
		`{"token_ids":[1,]}`,
		`{"token_ids":[1 2]}`,
		`{"token_ids":"x"}`,
		`{"token_ids":[1],"model":3}`,
		`{"token_ids":[1]} trailing`,
		`{"model":"a\"token_ids\":[5]","token_ids":[1]}`,
		`{"extra_args":{"token_ids":[5]},"token_ids":[1]}`,
		`{"token\u005fids":[1]}`,
		`[1,2]`,
		``,
	} {
		var fast, slow Request
		ferr := DecodeRequest([]byte(in), &fast)
		serr := json.Unmarshal([]byte(in), (*requestFields)(&slow))
		if (ferr == nil) != (serr == nil) || ferr != nil && ferr.Error() != serr.Error() {
			t.Errorf("%s: error %v, encoding/json %v", in, ferr, serr)
			continue
		}
		if ferr == nil && !reflect.DeepEqual(fast, slow) {
			t.Errorf("%s: %+v, encoding/json %+v", in, fast, slow)
		}
	}
}

// FuzzDecodeRequest: DecodeRequest is json.Unmarshal.
func FuzzDecodeRequest(f *testing.F) {
	f.Add(`{"model":"m","token_ids":[1,2,3],"annotations":["a"]}`)
	f.Add(`{"token_ids":[0, 42 ,7]}`)
	f.Fuzz(func(t *testing.T, in string) {
		var fast, slow Request
		ferr := DecodeRequest([]byte(in), &fast)
		serr := json.Unmarshal([]byte(in), (*requestFields)(&slow))
		if (ferr == nil) != (serr == nil) {
			t.Fatalf("%q: error %v, encoding/json %v", in, ferr, serr)
		}
		if ferr == nil && !reflect.DeepEqual(fast, slow) && !strings.Contains(in, "\x00") {
			t.Fatalf("%q: %+v, encoding/json %+v", in, fast, slow)
		}
	})
}

// The ids are written as strconv writes them.
func TestAppendTokenIDs(t *testing.T) {
	ids := []uint32{0, 1, 9, 10, 11, 99, 100, 101, 999, 1000, 65535, 151643, 4294967295}
	want, _ := json.Marshal(ids)
	if got := AppendTokenIDs(nil, ids); string(got) != string(want) {
		t.Errorf("appendTokenIDs = %s, want %s", got, want)
	}
	if got := AppendTokenIDs(nil, nil); string(got) != "[]" {
		t.Errorf("no ids: %s", got)
	}
}

func BenchmarkRequestMarshalJSON(b *testing.B) {
	r := &Request{Model: "m", TokenIDs: make([]uint32, 57000)}
	for i := range r.TokenIDs {
		r.TokenIDs[i] = uint32(i * 2654435761 % 151643)
	}
	for b.Loop() {
		if _, err := r.MarshalJSON(); err != nil {
			b.Fatal(err)
		}
	}
}

// A prompt's encoding given with its ids is what MarshalJSON writes; for
// other ids (a copy, a longer slice) it is not used.
func TestPromptJSONStandsForItsIds(t *testing.T) {
	ids := []uint32{3, 1, 4}
	enc := NewPromptJSON(ids, []byte("3,1,4"))
	r := &Request{Model: "m", TokenIDs: ids, PromptJSON: enc}
	got, _ := r.MarshalJSON()
	want, _ := json.Marshal((*requestFields)(r))
	if string(got) != string(want) {
		t.Errorf("with its encoding: %s, want %s", got, want)
	}
	// A stage that builds other ids (a migration appends the generated
	// ones) leaves the encoding behind.
	r.TokenIDs = append(r.TokenIDs[:3:3], 5)
	got, _ = r.MarshalJSON()
	if !strings.Contains(string(got), `"token_ids":[3,1,4,5]`) {
		t.Errorf("longer ids: %s", got)
	}
	r.TokenIDs = []uint32{3, 1, 4}
	r.PromptJSON = NewPromptJSON(ids, []byte("9,9,9"))
	got, _ = r.MarshalJSON()
	if !strings.Contains(string(got), `"token_ids":[3,1,4]`) {
		t.Errorf("a copy of the ids: %s", got)
	}
}
