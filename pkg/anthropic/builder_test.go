package anthropic

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dynamo-go/dynamo/pkg/openai"
)

// chunks build the chat chunks of one answer.
type chunks []*openai.ChatCompletionChunk

func (cs chunks) delta(d openai.ChatDelta) chunks {
	return append(cs, &openai.ChatCompletionChunk{Choices: []openai.ChatChunkChoice{{Delta: d}}})
}

func (cs chunks) text(s string) chunks      { return cs.delta(openai.ChatDelta{Content: &s}) }
func (cs chunks) reasoning(s string) chunks { return cs.delta(openai.ChatDelta{ReasoningContent: &s}) }

func (cs chunks) call(index int, id, name, args string) chunks {
	raw, _ := json.Marshal(args)
	i := index
	return cs.delta(openai.ChatDelta{ToolCalls: []openai.ToolCall{{Index: &i, ID: id, Function: openai.FunctionCall{Name: name, Arguments: raw}}}})
}

func (cs chunks) finish(reason, matched string) chunks {
	return append(cs, &openai.ChatCompletionChunk{Choices: []openai.ChatChunkChoice{{FinishReason: &reason, MatchedStop: matched}}})
}

func (cs chunks) usage(prompt, completion, cached int) chunks {
	u := &openai.Usage{PromptTokens: prompt, CompletionTokens: completion}
	if cached > 0 {
		u.PromptTokensDetails = &openai.PromptDetail{CachedTokens: cached}
	}
	return append(cs, &openai.ChatCompletionChunk{Choices: []openai.ChatChunkChoice{}, Usage: u})
}

// run feeds cs to a builder and returns the stream's events as JSON
// lines ("event: data"), and the folded message.
func run(t *testing.T, cs chunks, stops ...string) ([]string, *Message) {
	t.Helper()
	b := NewBuilder("msg_1", "demo", stops)
	var evs []Event
	for _, c := range cs {
		evs = append(evs, b.Add(c, 7)...)
	}
	evs = append(evs, b.Finish()...)
	lines := make([]string, len(evs))
	for i, ev := range evs {
		data, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		var typ struct{ Type string }
		if json.Unmarshal(data, &typ) != nil || typ.Type != ev.Type {
			t.Errorf("event %s: data %s has type %q", ev.Type, data, typ.Type)
		}
		lines[i] = string(data)
	}
	return lines, b.Message()
}

func TestStreamText(t *testing.T) {
	lines, m := run(t, chunks{}.text("Hel").text("lo").finish("stop", "").usage(7, 2, 3))
	want := []string{
		`{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"demo","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":7,"output_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0}}}`,
		`{"type":"ping"}`,
		`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hel"}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"lo"}}`,
		`{"type":"content_block_stop","index":0}`,
		`{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"input_tokens":4,"output_tokens":2,"cache_creation_input_tokens":0,"cache_read_input_tokens":3}}`,
		`{"type":"message_stop"}`,
	}
	if diff := cmp.Diff(want, lines); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	got, _ := json.Marshal(m)
	if w := `{"id":"msg_1","type":"message","role":"assistant","model":"demo","content":[{"type":"text","text":"Hello"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":4,"output_tokens":2,"cache_creation_input_tokens":0,"cache_read_input_tokens":3}}`; string(got) != w {
		t.Errorf("message %s\nwant    %s", got, w)
	}
}

func TestStreamToolCall(t *testing.T) {
	lines, m := run(t, chunks{}.text("Let me check.").call(0, "call_1", "get_weather", `{"city": `).call(0, "", "", `"Paris"}`).
		call(1, "call_2", "get_time", "").finish("tool_calls", "").usage(7, 9, 0))
	want := []string{
		`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Let me check."}}`,
		`{"type":"content_block_stop","index":0}`,
		`{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"call_1","name":"get_weather","input":{}}}`,
		`{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"city\": "}}`,
		`{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"\"Paris\"}"}}`,
		`{"type":"content_block_stop","index":1}`,
		`{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"call_2","name":"get_time","input":{}}}`,
		`{"type":"content_block_stop","index":2}`,
		`{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"input_tokens":7,"output_tokens":9,"cache_creation_input_tokens":0,"cache_read_input_tokens":0}}`,
		`{"type":"message_stop"}`,
	}
	if diff := cmp.Diff(want, lines[2:]); diff != "" {
		t.Errorf("events after message_start and ping (-want +got):\n%s", diff)
	}
	if len(m.Content) != 3 || string(m.Content[1].Input) != `{"city": "Paris"}` || string(m.Content[2].Input) != `{}` || *m.StopReason != StopToolUse {
		t.Errorf("message %+v", m)
	}
}

func TestStreamThinkingThenText(t *testing.T) {
	lines, m := run(t, chunks{}.reasoning("Deep ").reasoning("thought.").text("42").finish("length", "").usage(7, 3, 0))
	want := []string{
		`{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Deep "}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"thought."}}`,
		`{"type":"content_block_stop","index":0}`,
		`{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}`,
		`{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"42"}}`,
		`{"type":"content_block_stop","index":1}`,
	}
	if diff := cmp.Diff(want, lines[2:9]); diff != "" {
		t.Errorf("block events (-want +got):\n%s", diff)
	}
	if !strings.Contains(lines[9], `"stop_reason":"max_tokens"`) {
		t.Errorf("message_delta %s, want stop_reason max_tokens", lines[9])
	}
	if len(m.Content) != 2 || *m.Content[0].Thinking != "Deep thought." || *m.Content[0].Signature != "" || *m.Content[1].Text != "42" {
		t.Errorf("content %+v", m.Content)
	}
}

func TestStopReasons(t *testing.T) {
	for _, tc := range []struct {
		name            string
		cs              chunks
		stops           []string
		reason, matched string
	}{
		{"stop string of the request", chunks{}.text("a").finish("stop", "END"), []string{"x", "END"}, StopSequence, "END"},
		// A stop the client did not ask for (the model's own stop
		// strings) is the end of its turn.
		{"stop string of the model", chunks{}.text("a").finish("stop", "<|im_end|>"), []string{"END"}, StopEndTurn, ""},
		{"eos", chunks{}.text("a").finish("stop", ""), nil, StopEndTurn, ""},
		{"length", chunks{}.text("a").finish("length", ""), nil, StopMaxTokens, ""},
		{"content filter", chunks{}.finish("content_filter", ""), nil, StopRefusal, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, m := run(t, tc.cs, tc.stops...)
			seq := ""
			if m.StopSequence != nil {
				seq = *m.StopSequence
			}
			if m.StopReason == nil || *m.StopReason != tc.reason || seq != tc.matched {
				t.Errorf("stop_reason %v, stop_sequence %q; want %s, %q", m.StopReason, seq, tc.reason, tc.matched)
			}
		})
	}
}

func TestEmptyAndFailedStream(t *testing.T) {
	lines, m := run(t, nil)
	if len(lines) != 4 || !strings.Contains(lines[0], "message_start") || !strings.Contains(lines[2], `"stop_reason":null`) || len(m.Content) != 0 {
		t.Errorf("no chunks: events %v, message %+v", lines, m)
	}
	evs := NewBuilder("msg_1", "demo", nil).Fail(NewErrorBody(StatusOverloaded, "busy", ""))
	data, _ := json.Marshal(evs)
	if w := `[{"type":"error","error":{"type":"overloaded_error","message":"busy"}}]`; string(data) != w {
		t.Errorf("failure %s, want %s", data, w)
	}
}

func TestErrorType(t *testing.T) {
	for status, want := range map[int]string{400: "invalid_request_error", 401: "authentication_error", 403: "permission_error", 404: "not_found_error",
		405: "invalid_request_error", 413: "request_too_large", 429: "rate_limit_error", 500: "api_error", 503: "api_error", 504: "timeout_error", 529: "overloaded_error"} {
		if got := ErrorType(status); got != want {
			t.Errorf("ErrorType(%d) = %s, want %s", status, got, want)
		}
	}
}
