package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var (
	created  = time.Unix(1_700_000_000, 0)
	finished = time.Unix(1_700_000_003, 0)
)

// delta is one synthetic chat chunk of choice 0.
type delta struct {
	content, reasoning string
	calls              []ToolCall
	finish             string
}

// chunks turns deltas into a chat chunk stream as the preprocessor sends
// it: the role on the first chunk, then a usage chunk with no choices.
func chunks(ds ...delta) []*ChatCompletionChunk {
	var out []*ChatCompletionChunk
	for i, d := range ds {
		ch := ChatChunkChoice{}
		if i == 0 {
			ch.Delta.Role = "assistant"
		}
		if d.content != "" {
			ch.Delta.Content = &d.content
		}
		if d.reasoning != "" {
			ch.Delta.ReasoningContent = &d.reasoning
		}
		ch.Delta.ToolCalls = d.calls
		if d.finish != "" {
			ch.FinishReason = &d.finish
		}
		out = append(out, &ChatCompletionChunk{ID: "chatcmpl-r1", Object: ObjectChatCompletionChunk, Model: "demo", Choices: []ChatChunkChoice{ch}})
	}
	return append(out, &ChatCompletionChunk{
		ID: "chatcmpl-r1", Object: ObjectChatCompletionChunk, Model: "demo", Choices: []ChatChunkChoice{},
		Usage: &Usage{PromptTokens: 11, CompletionTokens: 7, TotalTokens: 18, PromptTokensDetails: &PromptDetail{CachedTokens: 4}},
	})
}

// call is a streamed tool call fragment.
func call(index int, id, name, args string) ToolCall {
	tc := ToolCall{Index: &index, ID: id, Function: FunctionCall{Name: name}}
	if id != "" {
		tc.Type = "function"
	}
	if args != "" || id != "" {
		tc.Function.Arguments, _ = json.Marshal(args)
	}
	return tc
}

// translate runs a builder over the chunks and returns the events as a
// client receives them (encoded, then decoded) and the unary answer.
func translate(t *testing.T, req *ResponsesRequest, cs []*ChatCompletionChunk) ([]ResponseEvent, []map[string]any, *Response) {
	t.Helper()
	b := NewResponseBuilder("r1", req, "demo", created)
	var evs []ResponseEvent
	for _, c := range cs {
		evs = append(evs, b.Add(c)...)
	}
	evs = append(evs, b.Finish(finished)...)
	var decoded []ResponseEvent
	var raw []map[string]any
	for _, ev := range evs {
		var buf bytes.Buffer
		if err := Encode(&buf, &ev); err != nil {
			t.Fatal(err)
		}
		var d ResponseEvent
		var m map[string]any
		if err := json.Unmarshal(buf.Bytes(), &d); err != nil {
			t.Fatal(err)
		}
		_ = json.Unmarshal(buf.Bytes(), &m)
		decoded = append(decoded, d)
		raw = append(raw, m)
	}

	u := NewResponseBuilder("r1", req, "demo", created)
	for _, c := range cs {
		u.Add(c)
	}
	u.Finish(finished)
	return decoded, raw, u.Response()
}

// fold rebuilds the response the way a client does: items from
// output_item.added, parts from content_part.added, then the deltas;
// each output_item.done must match what the deltas built. It returns the
// terminal event's response and the folded output.
func fold(t *testing.T, evs []ResponseEvent) (*Response, []OutputItem) {
	t.Helper()
	var out []OutputItem
	var final *Response
	for i, ev := range evs {
		if ev.SequenceNumber != i {
			t.Errorf("event %d (%s): sequence_number %d", i, ev.Type, ev.SequenceNumber)
		}
		if final != nil {
			t.Errorf("event %d (%s) after the terminal event", i, ev.Type)
		}
		switch ev.Type {
		case EventOutputItemAdded:
			if *ev.OutputIndex != len(out) {
				t.Errorf("event %d: item added at output_index %d, have %d items", i, *ev.OutputIndex, len(out))
			}
			out = append(out, *ev.Item)
		case EventContentPartAdded:
			it := &out[*ev.OutputIndex]
			if ev.ItemID != it.ID || *ev.ContentIndex != len(it.Content) {
				t.Errorf("event %d: part for %s/%d, item is %s with %d parts", i, ev.ItemID, *ev.ContentIndex, it.ID, len(it.Content))
			}
			it.Content = append(it.Content, *ev.Part)
		case EventOutputTextDelta, EventReasoningTextDelta:
			it := &out[*ev.OutputIndex]
			it.Content[*ev.ContentIndex].Text += *ev.Delta
		case EventFunctionArgsDelta:
			out[*ev.OutputIndex].Arguments += *ev.Delta
		case EventOutputTextDone, EventReasoningTextDone:
			if got := out[*ev.OutputIndex].Content[*ev.ContentIndex].Text; got != *ev.Text {
				t.Errorf("event %d: %s text %q, the deltas make %q", i, ev.Type, *ev.Text, got)
			}
		case EventFunctionArgsDone:
			if got := out[*ev.OutputIndex].Arguments; got != *ev.Arguments {
				t.Errorf("event %d: arguments %q, the deltas make %q", i, *ev.Arguments, got)
			}
		case EventOutputItemDone:
			it := out[*ev.OutputIndex]
			it.Status = ev.Item.Status
			if diff := cmp.Diff(*ev.Item, it); diff != "" {
				t.Errorf("event %d: item done differs from the deltas (-done +folded):\n%s", i, diff)
			}
			out[*ev.OutputIndex] = *ev.Item
		case EventResponseCompleted, EventResponseIncomplete, EventResponseFailed:
			final = ev.Response
		}
	}
	if final == nil {
		t.Fatal("no terminal event")
	}
	return final, out
}

// roundTrip is r as a client decodes it.
func roundTrip(t *testing.T, r *Response) *Response {
	t.Helper()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var out Response
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return &out
}

func types(evs []ResponseEvent) []string {
	var out []string
	for _, ev := range evs {
		out = append(out, ev.Type)
	}
	return out
}

// checkStream checks the event types, that folding the events gives the
// terminal event's response and that this is the unary answer.
func checkStream(t *testing.T, evs []ResponseEvent, unary *Response, wantTypes []string) *Response {
	t.Helper()
	if diff := cmp.Diff(wantTypes, types(evs)); diff != "" {
		t.Errorf("event types (-want +got):\n%s", diff)
	}
	final, folded := fold(t, evs)
	if diff := cmp.Diff(final.Output, folded); diff != "" {
		t.Errorf("folded output differs from the terminal response's (-terminal +folded):\n%s", diff)
	}
	if diff := cmp.Diff(roundTrip(t, unary), final); diff != "" {
		t.Errorf("streamed response differs from the unary one (-unary +streamed):\n%s", diff)
	}
	for _, ev := range evs[:2] {
		if ev.Response == nil || ev.Response.Status != ResponseInProgress || len(ev.Response.Output) != 0 || ev.Response.Usage != nil {
			t.Errorf("%s: response %+v, want in_progress with no output and no usage yet", ev.Type, ev.Response)
		}
	}
	return final
}

var (
	textOpen  = []string{EventOutputItemAdded, EventContentPartAdded}
	textClose = []string{EventOutputTextDone, EventContentPartDone, EventOutputItemDone}
	start     = []string{EventResponseCreated, EventResponseInProgress}
)

func concat(parts ...[]string) []string {
	var out []string
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func repeat(s string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}

func TestResponseBuilderText(t *testing.T) {
	instr := "Be brief."
	req := &ResponsesRequest{Model: "demo", Instructions: &instr}
	evs, raw, unary := translate(t, req, chunks(delta{content: "Hel"}, delta{content: "lo"}, delta{content: "!", finish: FinishStop}))
	final := checkStream(t, evs, unary, concat(start, textOpen, repeat(EventOutputTextDelta, 3), textClose, []string{EventResponseCompleted}))

	want := []OutputItem{{Type: ItemMessage, ID: "msg_r1", Status: ResponseCompleted, Role: "assistant", Content: []OutputContent{{Type: PartOutputText, Text: "Hello!"}}}}
	if diff := cmp.Diff(want, unary.Output); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
	wantUsage := &ResponseUsage{InputTokens: 11, OutputTokens: 7, TotalTokens: 18, InputTokensDetails: InputTokensDetails{CachedTokens: 4}}
	if diff := cmp.Diff(wantUsage, final.Usage); diff != "" {
		t.Errorf("usage (-want +got):\n%s", diff)
	}
	if unary.ID != "resp_r1" || unary.Object != "response" || unary.Status != ResponseCompleted || unary.CreatedAt != created.Unix() ||
		unary.CompletedAt == nil || *unary.CompletedAt != finished.Unix() || unary.IncompleteDetails != nil || unary.Error != nil ||
		unary.Model != "demo" || *unary.Instructions != instr || unary.OutputText() != "Hello!" {
		t.Errorf("response %+v", unary)
	}
	// The fields the SDK's event types require are on the wire.
	for i, ev := range raw {
		switch ev["type"] {
		case EventOutputTextDelta, EventOutputTextDone:
			for _, k := range []string{"item_id", "output_index", "content_index", "logprobs", "sequence_number"} {
				if _, ok := ev[k]; !ok {
					t.Errorf("event %d %s lacks %s: %v", i, ev["type"], k, ev)
				}
			}
		case EventContentPartAdded:
			part, _ := ev["part"].(map[string]any)
			if part["text"] != "" || part["annotations"] == nil {
				t.Errorf("event %d: part %v, want empty output_text with annotations", i, part)
			}
		}
	}
	// Echoed settings with OpenAI's defaults (store: true when the
	// request does not say).
	b, _ := json.Marshal(unary)
	for _, s := range []string{`"temperature":1`, `"top_p":1`, `"tool_choice":"auto"`, `"tools":[]`, `"parallel_tool_calls":true`,
		`"store":true`, `"max_output_tokens":null`, `"previous_response_id":null`, `"truncation":"disabled"`,
		`"text":{"format":{"type":"text"}}`, `"output_tokens_details":{"reasoning_tokens":0}`, `"annotations":[]`} {
		if !strings.Contains(string(b), s) {
			t.Errorf("response %s\nlacks %s", b, s)
		}
	}
}

func TestResponseBuilderReasoningThenText(t *testing.T) {
	evs, _, unary := translate(t, &ResponsesRequest{}, chunks(
		delta{reasoning: "The user "}, delta{reasoning: "greets."}, delta{content: "Hi"}, delta{content: " there", finish: FinishStop}))
	reasoning := concat(textOpen, repeat(EventReasoningTextDelta, 2), []string{EventReasoningTextDone, EventContentPartDone, EventOutputItemDone})
	checkStream(t, evs, unary, concat(start, reasoning, textOpen, repeat(EventOutputTextDelta, 2), textClose, []string{EventResponseCompleted}))
	want := []OutputItem{
		{Type: ItemReasoning, ID: "rs_r1", Status: ResponseCompleted, Content: []OutputContent{{Type: PartReasoningText, Text: "The user greets."}}},
		{Type: ItemMessage, ID: "msg_r1", Status: ResponseCompleted, Role: "assistant", Content: []OutputContent{{Type: PartOutputText, Text: "Hi there"}}},
	}
	if diff := cmp.Diff(want, unary.Output); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
	b, _ := json.Marshal(unary.Output[0])
	if !strings.Contains(string(b), `"summary":[]`) {
		t.Errorf("reasoning item %s: want an empty summary", b)
	}
}

func TestResponseBuilderToolCalls(t *testing.T) {
	tools := []json.RawMessage{json.RawMessage(`{"type":"function","name":"weather","parameters":{"type":"object"}}`)}
	req := &ResponsesRequest{Tools: tools, ToolChoice: json.RawMessage(`"required"`)}
	evs, _, unary := translate(t, req, chunks(
		delta{content: "Let me check."},
		delta{calls: []ToolCall{call(0, "call_a", "weather", "")}},
		delta{calls: []ToolCall{call(0, "", "", `{"city":`)}},
		delta{calls: []ToolCall{call(0, "", "", `"Paris"}`)}},
		delta{calls: []ToolCall{call(1, "call_b", "time", `{}`)}, finish: FinishToolCalls},
	))
	fc := func(n int) []string {
		return concat([]string{EventOutputItemAdded}, repeat(EventFunctionArgsDelta, n), []string{EventFunctionArgsDone, EventOutputItemDone})
	}
	checkStream(t, evs, unary, concat(start, textOpen, []string{EventOutputTextDelta}, textClose, fc(2), fc(1), []string{EventResponseCompleted}))
	want := []OutputItem{
		{Type: ItemMessage, ID: "msg_r1", Status: ResponseCompleted, Role: "assistant", Content: []OutputContent{{Type: PartOutputText, Text: "Let me check."}}},
		{Type: ItemFunctionCall, ID: "fc_r1_0", Status: ResponseCompleted, CallID: "call_a", Name: "weather", Arguments: `{"city":"Paris"}`},
		{Type: ItemFunctionCall, ID: "fc_r1_1", Status: ResponseCompleted, CallID: "call_b", Name: "time", Arguments: `{}`},
	}
	if diff := cmp.Diff(want, unary.Output); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
	if unary.Status != ResponseCompleted {
		t.Errorf("status %s, want completed (finish tool_calls)", unary.Status)
	}
	b, _ := json.Marshal(unary)
	for _, s := range []string{`"tool_choice":"required"`, `"tools":[{"type":"function","name":"weather","parameters":{"type":"object"}}]`,
		`{"type":"function_call","id":"fc_r1_1","status":"completed","call_id":"call_b","name":"time","arguments":"{}"}`} {
		if !strings.Contains(string(b), s) {
			t.Errorf("response %s\nlacks %s", b, s)
		}
	}
}

func TestResponseBuilderLengthIsIncomplete(t *testing.T) {
	maxTokens := int64(2)
	evs, _, unary := translate(t, &ResponsesRequest{MaxOutputTokens: &maxTokens}, chunks(delta{content: "One"}, delta{content: " two", finish: FinishLength}))
	final := checkStream(t, evs, unary, concat(start, textOpen, repeat(EventOutputTextDelta, 2), textClose, []string{EventResponseIncomplete}))
	if final.Status != ResponseIncomplete || final.IncompleteDetails == nil || final.IncompleteDetails.Reason != "max_output_tokens" || final.CompletedAt != nil {
		t.Errorf("response status %s, incomplete_details %+v, completed_at %v: want incomplete for max_output_tokens, not completed", final.Status, final.IncompleteDetails, final.CompletedAt)
	}
	if final.Output[0].Status != ResponseIncomplete || final.Output[0].Content[0].Text != "One two" {
		t.Errorf("message %+v, want the text so far, incomplete", final.Output[0])
	}
	if *final.MaxOutputTokens != 2 {
		t.Errorf("max_output_tokens echoed as %v", final.MaxOutputTokens)
	}
}

func TestResponseBuilderFail(t *testing.T) {
	b := NewResponseBuilder("r1", &ResponsesRequest{}, "demo", created)
	var evs []ResponseEvent
	for _, c := range chunks(delta{content: "Par"}) {
		evs = append(evs, b.Add(c)...)
	}
	evs = append(evs, b.Fail("the worker went away")...)
	last := evs[len(evs)-1]
	if last.Type != EventResponseFailed || last.SequenceNumber != len(evs)-1 {
		t.Fatalf("last event %s #%d, want response.failed #%d", last.Type, last.SequenceNumber, len(evs)-1)
	}
	r := last.Response
	if r.Status != ResponseFailed || r.Error == nil || r.Error.Code != "server_error" || r.Error.Message != "the worker went away" {
		t.Errorf("failed response status %s error %+v", r.Status, r.Error)
	}
	if len(r.Output) != 1 || r.Output[0].Status != ResponseInProgress || r.Output[0].Content[0].Text != "Par" {
		t.Errorf("failed response output %+v, want the partial message in progress", r.Output)
	}
}

// An event keeps the state it was sent with: later deltas do not change
// the item of an earlier output_item.added.
func TestResponseBuilderEventsAreSnapshots(t *testing.T) {
	b := NewResponseBuilder("r1", &ResponsesRequest{}, "demo", created)
	evs := b.Add(chunks(delta{content: "a"})[0])
	b.Add(chunks(delta{content: "b"})[0])
	b.Finish(finished)
	for _, ev := range evs {
		if ev.Type == EventOutputItemAdded && (ev.Item.Status != ResponseInProgress || len(ev.Item.Content) != 0) {
			t.Errorf("output_item.added item changed after it was sent: %+v", ev.Item)
		}
		if ev.Type == EventContentPartAdded && ev.Part.Text != "" {
			t.Errorf("content_part.added part changed after it was sent: %+v", ev.Part)
		}
	}
	if got := fmt.Sprint(b.Response().OutputText()); got != "ab" {
		t.Errorf("text %q", got)
	}
}
