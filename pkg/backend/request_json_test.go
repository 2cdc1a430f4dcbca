package backend

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/dynamo-go/dynamo/pkg/telemetry"
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
	for _, in := range append([]string{
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
	}, requestShapes...) {
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

// requestShapes are requests of every field the reader without
// reflection knows (request_strict.go), and values at the edges of its
// subset, where it must hand over to encoding/json.
var requestShapes = []string{
	`{"model":"demo","token_ids":[510,84,82,265,198],"stop_conditions":{"max_tokens":5,"stop_token_ids_hidden":[511,508]},"sampling_options":{},"output_options":{},"eos_token_ids":[511,508],"mdc_sum":"sha256:0c56","annotations":[]}`,
	`{"model":"m","token_ids":[1],"stop_conditions":{"max_tokens":5,"stop":["a\n","\u00e9\"\\\/"],"stop_token_ids":[1],"stop_token_ids_visible":[2],"min_tokens":1,"ignore_eos":true,"max_thinking_tokens":9},` +
		`"sampling_options":{"n":2,"best_of":3,"presence_penalty":-0.5,"frequency_penalty":1e-3,"repetition_penalty":1.1,"temperature":0.7,"top_p":0.95,"top_k":-1,"min_p":0,"use_beam_search":false,"length_penalty":1,"seed":-3,"include_stop_str_in_output":true},` +
		`"output_options":{"logprobs":2,"prompt_logprobs":0,"skip_special_tokens":false,"formatted_prompt":true,"return_tokens_as_token_ids":true},` +
		`"routing":{"backend_instance_id":18446744073709551615,"prefill_worker_id":1,"decode_worker_id":2,"dp_rank":0,"prefill_dp_rank":1,"expected_output_tokens":7,"lora_name":"ad","cache_salt":"s","priority":-1,"strict_priority":true},` +
		`"embedding":{"dimensions":8},"migrated_tokens":3,"postprocess":{"chat":true,"thinking":false,"tool_choice":"auto","tool_name":"f","single_tool_call":true,"tools":["f","g"]},"_HEALTH_CHECK":true}`,
	`{"routing":null,"model":null,"stop_conditions":null,"sampling_options":null,"output_options":null,"migrated_tokens":null,"annotations":null,"postprocess":null,"embedding":null,"_HEALTH_CHECK":null,"eos_token_ids":null}`,
	`{"stop_conditions":{"max_tokens":1},"stop_conditions":{"min_tokens":2},"routing":{"dp_rank":1},"routing":{"lora_name":"x"}}`,
	`{"stop_conditions":{"max_tokens":null,"stop":null,"ignore_eos":null}}`,
	`{"model":"\ud83d\ude00"}`,
	`{"model":"\ud83d"}`,
	`{"model":"ÿ"}`,
	"{\"model\":\"\xff\"}",
	`{"model":"é\n"}`,
	`{"model":"a	b"}`,
	`{"sampling_options":{"temperature":1e400}}`,
	`{"sampling_options":{"seed":9223372036854775808}}`,
	`{"sampling_options":{"seed":-9223372036854775808,"n":1.0}}`,
	`{"stop_conditions":{"max_tokens":4294967296}}`,
	`{"stop_conditions":{"max_tokens":-0}}`,
	`{"routing":{"priority":-0}}`,
	`{"annotations":["a",null]}`,
	`{"token_ids":[1,null]}`,
	`{"_HEALTH_CHECK":"true"}`,
	`{"model":"m","unknown":1}`,
	`{"Model":"m"}`,
	`{"model":"m",}`,
	`{"sampling_options":{"guided_decoding":{"json":{}}}}`,
	`{"prefill_result":null,"token_ids":[1]}`,
	`{"migration_link":{"trace_id":"4bf92f3577b34da6a3ce929d0e0e4736","span_id":"00f067aa0ba902b7"},"migrated_tokens":2}`,
	`{"migration_link":null}`, `{"migration_link":{"x":1}}`,
	"{\"model\":\"m\"}\n",
}

// FuzzDecodeRequest: DecodeRequest is json.Unmarshal.
func FuzzDecodeRequest(f *testing.F) {
	f.Add(`{"model":"m","token_ids":[1,2,3],"annotations":["a"]}`)
	f.Add(`{"token_ids":[0, 42 ,7]}`)
	for _, in := range requestShapes {
		f.Add(in)
	}
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
	for _, n := range []int{100, 57000} {
		r := &Request{Model: "demo", TokenIDs: make([]uint32, n), EOSTokenIDs: []uint32{511, 508}, Annotations: []string{},
			MDCSum:         "sha256:0c566541b90a2785617b5191fe5eb484f46f6a0d64880a84871cb5df4a5c4eaf",
			StopConditions: StopConditions{MaxTokens: Ptr(uint32(16)), StopTokenIDsHidden: []uint32{511, 508}}}
		for i := range r.TokenIDs {
			r.TokenIDs[i] = uint32(i * 2654435761 % 151643)
		}
		b.Run(fmt.Sprintf("ids=%d", n), func(b *testing.B) {
			for b.Loop() {
				if _, err := r.MarshalJSON(); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("ids=%d/encoding-json", n), func(b *testing.B) {
			r := *r
			r.ExtraArgs = json.RawMessage(`{}`) // the encoding/json path
			for b.Loop() {
				if _, err := r.MarshalJSON(); err != nil {
					b.Fatal(err)
				}
			}
		})
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

// BenchmarkDecodeRequest: a worker's decoding of the request the frontend
// sends (bench-stack's 64-word chat prompt; a 60,000-token one), against
// encoding/json (with the ids read directly: DecodeRequest before the
// reader without reflection).
func BenchmarkDecodeRequest(b *testing.B) {
	for _, n := range []int{100, 60000} {
		ids := make([]uint32, n)
		for i := range ids {
			ids[i] = uint32(i*7919) % 151000
		}
		req := &Request{Model: "demo", TokenIDs: ids, EOSTokenIDs: []uint32{511, 508}, MDCSum: "sha256:0c566541b90a2785617b5191fe5eb484f46f6a0d64880a84871cb5df4a5c4eaf",
			Annotations: []string{}, StopConditions: StopConditions{MaxTokens: Ptr(uint32(16)), StopTokenIDsHidden: []uint32{511, 508}}}
		body, err := json.Marshal(req)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("ids=%d/strict", n), func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				var r Request
				if err := DecodeRequest(body, &r); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("ids=%d/encoding-json", n), func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			start, end, _ := tokenIDsSpan(body)
			for b.Loop() {
				var r Request
				ids, _ := parseTokenIDs(body[start:end])
				rest := append(append(append([]byte{}, body[:start]...), "null"...), body[end:]...)
				if err := json.Unmarshal(rest, (*requestFields)(&r)); err != nil {
					b.Fatal(err)
				}
				r.TokenIDs = ids
			}
		})
	}
}

// FuzzRequestJSON: MarshalJSON writes what encoding/json writes for the
// plain struct, for requests built from the fuzzer's strings, numbers and
// flags (each bit sets one optional field).
func FuzzRequestJSON(f *testing.F) {
	f.Add("demo", "a<b>&\"\\\n\t\b\f\x01é\u2028\xff", 0.7, int64(-3), uint32(16), uint64(0), []byte{1, 2, 3})
	f.Add("", "", 1e-7, int64(0), uint32(0), uint64(1<<40), []byte(nil))
	f.Add("m", "s", 1e21, int64(1<<62), uint32(1<<31), uint64(1<<63-1), []byte{})
	f.Add("m", "s", math.Inf(1), int64(1), uint32(1), uint64(0xfffff), []byte{9})
	f.Fuzz(func(t *testing.T, model, s string, x float64, n int64, u uint32, flags uint64, ids []byte) {
		bit := func(i int) bool { return flags>>i&1 == 1 }
		r := &Request{Model: model, MDCSum: s, MigratedTokens: int(n % 1000)}
		if bit(0) {
			r.TokenIDs = []uint32{}
			for _, c := range ids {
				r.TokenIDs = append(r.TokenIDs, uint32(c)*u)
			}
		}
		if bit(1) {
			r.EOSTokenIDs = []uint32{u}
		}
		if bit(2) {
			r.Annotations = []string{s, model}
		}
		sc := &r.StopConditions
		if bit(3) {
			sc.MaxTokens, sc.MinTokens, sc.MaxThinkingTokens = &u, &u, &u
		}
		if bit(4) {
			sc.Stop, sc.StopTokenIDs, sc.StopTokenIDsHidden, sc.StopTokenIDsVisible = []string{s}, []uint32{u}, []uint32{1, u}, []uint32{}
			sc.IgnoreEOS = Ptr(bit(5))
		}
		so := &r.SamplingOptions
		if bit(6) {
			so.Temperature, so.TopP, so.MinP, so.PresencePenalty = &x, Ptr(-x), Ptr(x/3), Ptr(x*1e10)
			so.FrequencyPenalty, so.RepetitionPenalty, so.LengthPenalty = Ptr(1/x), Ptr(x*x), Ptr(float64(n))
		}
		if bit(7) {
			so.N, so.BestOf, so.TopK, so.Seed = Ptr(int(n)), Ptr(int(u)), Ptr(-int(n)), &n
			so.UseBeamSearch, so.IncludeStopStrInOutput = Ptr(bit(8)), Ptr(!bit(8))
		}
		if bit(9) {
			oo := &r.OutputOptions
			oo.Logprobs, oo.PromptLogprobs = &u, Ptr(u/2)
			oo.SkipSpecialTokens, oo.FormattedPrompt, oo.ReturnTokensAsTokenIDs = Ptr(bit(10)), Ptr(bit(11)), Ptr(bit(12))
		}
		if bit(13) {
			r.Routing = &Routing{BackendInstanceID: Ptr(uint64(u)), PrefillWorkerID: Ptr(flags), DecodeWorkerID: Ptr(uint64(n)),
				DPRank: &u, PrefillDPRank: Ptr(u + 1), ExpectedOutputTokens: Ptr(u / 3), LoraName: &s, CacheSalt: &model,
				Priority: Ptr(int(n)), StrictPriority: Ptr(bit(14))}
		}
		if bit(15) {
			r.Routing = &Routing{}
		}
		if bit(16) {
			r.Embedding = &EmbeddingOptions{}
			if bit(17) {
				r.Embedding.Dimensions = Ptr(int(u))
			}
		}
		if bit(18) {
			r.MigrationLink = &telemetry.Link{TraceID: s, SpanID: model}
		}
		if bit(19) {
			r.Postprocess = &Postprocess{Chat: bit(20), Thinking: bit(21), ToolChoice: s, ToolName: model, SingleToolCall: bit(22)}
			if bit(23) {
				r.Postprocess.Tools = []string{s}
			}
		}
		r.HealthCheck = bit(24)
		if bit(25) {
			r.ExtraArgs = json.RawMessage(`{"a":1}`)
		}
		got, gerr := json.Marshal(r)
		want, werr := json.Marshal((*requestFields)(r))
		if (gerr == nil) != (werr == nil) || string(got) != string(want) {
			t.Fatalf("MarshalJSON\n got %s (%v)\nwant %s (%v)", got, gerr, want, werr)
		}
	})
}
