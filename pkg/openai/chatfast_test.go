package openai

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// allDecodeOptions are the option sets the differential checks run under.
var allDecodeOptions = []DecodeOptions{
	{}, {AllowUnknownFields: true}, {DisableNvExt: true}, {AllowUnknownFields: true, DisableNvExt: true},
}

// checkSameAsSlow fails unless DecodeChat returns for body exactly what
// the encoding/json path returns: the same request, every field and raw
// byte included, or the same error.
func checkSameAsSlow(t *testing.T, body []byte, opts DecodeOptions) {
	t.Helper()
	got, gotErr := DecodeChat(body, opts)
	want, wantErr := decodeChatSlow(body, opts)
	if sameDecode(got, gotErr, want, wantErr) {
		return
	}
	if opts.AllowUnknownFields {
		// With unknown fields the slow path decodes a body rebuilt from a
		// map, so which of two bad fields it reports varies between runs:
		// the fast answer must be one of its answers.
		for range 200 {
			if want, wantErr = decodeChatSlow(body, opts); sameDecode(got, gotErr, want, wantErr) {
				return
			}
		}
	}
	t.Fatalf("DecodeChat(%.300q, %+v)\n got  %s\n want %s", body, opts, describeDecode(got, gotErr), describeDecode(want, wantErr))
}

func sameDecode(a *ChatCompletionRequest, aErr error, b *ChatCompletionRequest, bErr error) bool {
	return reflect.DeepEqual(a, b) && reflect.DeepEqual(aErr, bErr)
}

func describeDecode(r *ChatCompletionRequest, err error) string {
	if err != nil {
		var ve *ValidationError
		if errors.As(err, &ve) {
			return fmt.Sprintf("error %q (param %q)", ve.Message, ve.Param)
		}
		return fmt.Sprintf("error %v (%T)", err, err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "request %+v", *r)
	for i, m := range r.Messages {
		fmt.Fprintf(&b, "\n  message %d: %+v raw %q", i, m, m.Raw)
		if m.Content.Text != nil {
			fmt.Fprintf(&b, " text %q", *m.Content.Text)
		}
	}
	return b.String()
}

// msgBody is a chat body holding the given messages array.
func msgBody(messages string) string { return `{"model":"m","messages":` + messages + `}` }

// fastPathCases are hand-written bodies around the fast path's edges.
var fastPathCases = []string{
	// Common shapes, with whitespace in odd places.
	msgBody(`[{"role":"user","content":"hi"}]`),
	" \t\r\n{ \"model\" : \"m\" ,\n \"messages\" : [ { \"role\" : \"user\" , \"content\" : \"hi\" } , {\"content\":\"x\",\"role\":\"assistant\"} ] } \n",
	msgBody(`[{"role":"system","content":""},{"role":"user","content":"a","name":"bob"},{"role":"tool","tool_call_id":"c1","content":"18C"}]`),
	msgBody(`[{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}]}]`),
	msgBody(`[{"role":"assistant","tool_calls":[{"index":0,"function":{"name":"f","arguments":{"a":[1,2]}}}]}]`),
	msgBody(`[{"role":"assistant","tool_calls":[]}]`),
	msgBody(`[{"role":"assistant","tool_calls":null,"name":null,"tool_call_id":null,"content":"x"}]`),
	msgBody(`[{"role":null,"content":"x"}]`),
	msgBody(`[{"role":"user","content":[]}]`),
	msgBody(`[{"role":"user","content":[{"type":"text","text":"a","cache_control":{"x":1}},{"type":"image_url","image_url":{"url":"u"}}]}]`),
	msgBody(`[{"role":"user","content":[{"type":"image_url","image_url":null},{"type":"text","text":null}]}]`),
	msgBody(`[{"role":"user","content":"x","reasoning_content":"<think>r</think>","extra":{"a":[1,{"b":null}]},"Raw":1,"-":2,"x":1,"x":2}]`),
	msgBody(`[]`),
	msgBody(`[{}]`),
	// Escapes, surrogates and non-ASCII in contents.
	msgBody(`[{"role":"user","content":"\"q\" \\ \/ \b\f\n\r\t \u00e9 \u4e2d \ud83d\ude00 caf` + "é 中 😀" + `"}]`),
	msgBody(`[{"role":"user","content":"lone \ud800 \udc00 \ud800\u0041 \udbff\udfff \ud800\ud800\udc00 \u0000 end\\"}]`),
	msgBody(`[{"role":"us\u0065r","content":"\\\\\\\"x"},{"role":"user","content":"` + strings.Repeat(`ab\"c\\`, 300) + `"}]`),
	msgBody(`[{"r\u006fle":"user","c\u006fntent":"x"}]`),
	// Case variants and duplicates of message fields.
	msgBody(`[{"ROLE":"user","content":"x"}]`),
	msgBody(`[{"role":"user","Role":"system","content":"x"}]`),
	msgBody(`[{"role":"user","Content":"x"}]`),
	msgBody(`[{"role":"user","content":"x","TOOL_CALLS":[{"id":"1"}]}]`),
	msgBody(`[{"role":"user","content":"x","tool_callſ":[{"id":"1"}]}]`),
	msgBody(`[{"role":"user","content":"x","rôle":"system"}]`),
	msgBody(`[{"role":"user","role":"system","content":"x"}]`),
	msgBody(`[{"role":"user","content":"x","content":[{"type":"text","text":"y"}]}]`),
	msgBody(`[{"role":"assistant","tool_calls":[{"id":"a","type":"t"}],"tool_calls":[{"id":"b"}]}]`),
	// Field values of other kinds.
	msgBody(`[{"role":1,"content":"x"}]`),
	msgBody(`[{"role":["user"],"content":"x"}]`),
	msgBody(`[{"role":"user","content":5}]`),
	msgBody(`[{"role":"user","content":true}]`),
	msgBody(`[{"role":"user","content":{"text":"x"}}]`),
	msgBody(`[{"role":"user","content":[1]}]`),
	msgBody(`[{"role":"user","content":[null]}]`),
	msgBody(`[{"role":"user","content":[{"type":1}]}]`),
	msgBody(`[{"role":"user","content":[[]]}]`),
	msgBody(`[{"role":"user","content":"x","name":7}]`),
	msgBody(`[{"role":"tool","content":"x","tool_call_id":{}}]`),
	msgBody(`[{"role":"assistant","tool_calls":{}}]`),
	msgBody(`[{"role":"assistant","tool_calls":"x"}]`),
	msgBody(`[{"role":"assistant","tool_calls":[{"index":"0"}]}]`),
	msgBody(`[{"role":"assistant","tool_calls":[{"index":1e400}]}]`),
	msgBody(`[{"role":"assistant","tool_calls":[{"index":99999999999999999999}]}]`),
	msgBody(`[{"role":"assistant","tool_calls":[1]}]`),
	msgBody(`[{"role":"assistant","tool_calls":[null]}]`),
	// Messages that are not objects.
	msgBody(`null`), msgBody(`{}`), msgBody(`"x"`), msgBody(`1`),
	msgBody(`[null]`), msgBody(`[1]`), msgBody(`["hi"]`), msgBody(`[[]]`), msgBody(`[true]`),
	msgBody(`[{"role":"user","content":"a"},null]`),
	// The messages key itself.
	`{"model":"m","Messages":[{"role":"user","content":"x"}]}`,
	`{"model":"m","MESSAGES":[{"role":"user","content":"x"}],"messages":[{"role":"user","content":"y"}]}`,
	`{"model":"m","messages":[{"role":"user","content":"y"}],"Messages":[{"role":"user","content":"x"}]}`,
	`{"model":"m","meſſages":[{"role":"user","content":"x"}],"messages":[{"role":"user","content":"y"}]}`,
	`{"model":"m","messages":[{"role":"user","content":"x"}],"messages":[{"role":"system","content":"y"}]}`,
	`{"model":"m","messages":[{"role":"user","content":"x"}],"messages":[{"role":"system"}, 5]}`,
	`{"model":"m","messages":[{"role":1}],"messages":[{"role":"user","content":"y"}]}`,
	`{"model":"m","messag\u0065s":[{"role":"user","content":"x"}]}`,
	`{"model":"m","messages":[{"role":"user","content":"x"}],"messag\u0065s":[]}`,
	`{"model":"m"}`,
	`{"messages":[{"role":"user","content":"x"}]}`,
	// Errors elsewhere in the body, alone and with bad messages.
	msgBody(`[{"role":"user","content":"x"}],"temperature":"hot"`),
	msgBody(`[{"role":"user","content":"x"}],"temperature":"hot","top_p":"x","stop":5`),
	`{"temperature":"hot","messages":[{"role":1}],"model":"m"}`,
	`{"stop":5,"messages":[{"role":"user","content":5}],"model":"m"}`,
	`{"messages":[{"role":"user","content":"x"}],"model":1,"max_tokens":1e400}`,
	`{"messages":[{"role":"user","content":"x"}],"model":"m","max_tokens":99999999999999999999}`,
	`{"messages":[{"role":"user","content":"x"}],"model":"m","seed":-0,"temperature":1E-2,"top_p":0.5e0}`,
	msgBody(`[{"role":"user","content":"x"}],"foo":1,"Temperature":2,"temperature":1`),
	msgBody(`[{"role":"user","content":"x"}],"foo":{"messages":[1]},"bar":[{"role":1}]`),
	msgBody(`[{"role":"user","content":"x"}],"nvext":{"greed_sampling":true}`),
	msgBody(`[{"role":"user","content":"x"}],"nvext":{"zzz":1}`),
	msgBody(`[{"role":"user","content":"x"}],"nvext":null`),
	msgBody(`[{"role":"user","content":"x"}],"functions":[{"name":"f"}],"function_call":"auto"`),
	msgBody(`[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":"required"`),
	msgBody(`[{"role":"bot","content":"x"}]`),
	msgBody(`[{"content":"x"}]`),
	// Not JSON, not an object, not UTF-8.
	``, ` `, `null`, `[]`, `"x"`, `1`,
	msgBody(`[{"role":"user","content":"x"}]`) + ` x`,
	msgBody(`[{"role":"user","content":"x"}]`) + `}`,
	msgBody(`[{"role":"user","content":"x"}]`) + `{}`,
	msgBody(`[{"role":"user","content":"x"}`),
	msgBody(`[{"role":"user","content":"x` + "\x01" + `"}]`),
	msgBody(`[{"role":"user","content":"\x"}]`),
	msgBody(`[{"role":"user","content":"\u12"}]`),
	msgBody(`[{"role":"user","content":"` + "\xff\xfe" + `"}]`),
	msgBody(`[{"role":"user","content":"x","` + "\xc3" + `":1}]`),
	"\ufeff" + msgBody(`[{"role":"user","content":"x"}]`),
	msgBody(`[{"role":"user","content":"x",}]`),
	msgBody(`[{"role":"user","content":"x"},]`),
	msgBody(`[{"role":"user","content":01}]`),
}

// deepCases nest an ignored message field and a top-level field around
// encoding/json's depth limit.
func deepCases() []string {
	var cases []string
	for _, d := range []int{9997, 9998, 9999, 10000} {
		nest := strings.Repeat("[", d) + strings.Repeat("]", d)
		cases = append(cases,
			msgBody(`[{"role":"user","content":"x","deep":`+nest+`}]`),
			msgBody(`[{"role":"user","content":"x"}],"deep":`+nest),
		)
	}
	return cases
}

// TestFastPathMatchesSlowPath decodes every body the package's tests use,
// and edge cases, both ways under every option set.
func TestFastPathMatchesSlowPath(t *testing.T) {
	bodies := append([]string{fullChat, smallChat, string(longConversation())}, fastPathCases...)
	bodies = append(bodies, deepCases()...)
	for _, tc := range decodeErrorTests {
		bodies = append(bodies, tc.body)
	}
	for _, tc := range chatRuleTests {
		if tc.body != "" {
			bodies = append(bodies, tc.body)
		} else {
			bodies = append(bodies, chatBody(tc.extra))
		}
	}
	for _, body := range bodies {
		for _, opts := range allDecodeOptions {
			checkSameAsSlow(t, []byte(body), opts)
		}
	}
}

// The fast path is taken for the common shapes (so that the checks above
// test it) and declined for the unusual ones.
func TestFastPathTakenOrDeclined(t *testing.T) {
	for _, body := range []string{
		fullChat, smallChat, string(longConversation()),
		msgBody(`[]`),
		msgBody(`[{"role":"user","content":"x"}],"temperature":"hot"`),
		msgBody(`[{"role":"user","content":"x"}],"foo":1,"Temperature":2`),
		msgBody(`[{"role":"user","content":"x","reasoning_content":"r","x":1,"x":2}]`),
		msgBody(`[{"r\u006fle":"user","content":"\ud83d\ude00"}]`),
	} {
		if _, _, ok := splitMessages([]byte(body)); !ok {
			t.Errorf("fast path declined %.200s", body)
		}
	}
	for _, body := range []string{
		`{"model":"m","Messages":[]}`,
		`{"model":"m","messages":[],"messages":[]}`,
		`{"model":"m"}`, `[]`, msgBody(`null`), msgBody(`[null]`),
		msgBody(`[{"ROLE":"user"}]`), msgBody(`[{"role":"user","role":"user"}]`),
		msgBody(`[{"role":"user","rôle":"x"}]`), msgBody(`[{"role":1}]`),
		msgBody(`[{"role":"user","content":5}]`), msgBody(`[{"role":"user","content":[1]}]`),
		msgBody(`[{"role":"assistant","tool_calls":[{"index":"0"}]}]`),
		msgBody(`[]`) + ` x`, "{\"model\":\"\xff\",\"messages\":[]}",
	} {
		if _, _, ok := splitMessages([]byte(body)); ok {
			t.Errorf("fast path taken for %.200s", body)
		}
	}
}

// Raw is a copy: it does not alias the request body.
func TestFastPathRawIsCopied(t *testing.T) {
	body := []byte(msgBody(`[{"role":"user","content":"hi"}]`))
	r, err := DecodeChat(body, DecodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range body {
		body[i] = ' '
	}
	if got := string(r.Messages[0].Raw); got != `{"role":"user","content":"hi"}` {
		t.Errorf("raw after the body was overwritten = %q", got)
	}
}

// The scalars after the messages are read without reflection for the
// common shapes (so that the checks above test that reader) and left to
// decodeObject for the others.
func TestChatTopStrictTakenOrDeclined(t *testing.T) {
	rest := func(body string) []byte {
		t.Helper()
		_, r, ok := splitMessages([]byte(body))
		if !ok {
			t.Fatalf("splitMessages declined %s", body)
		}
		return r
	}
	for _, body := range []string{
		smallChat,
		msgBody(`[]`),
		chatBody(`"stream":true,"stream_options":{"include_usage":true},"max_tokens":16,"ignore_eos":true,"seed":-1,"n":null`),
		chatBody(`"temperature":0.2,"top_p":1,"top_k":-1,"min_p":0,"min_tokens":2,"user":"u","logprobs":true,"top_logprobs":3`),
	} {
		var r ChatCompletionRequest
		if !decodeChatTopStrict(rest(body), &r) {
			t.Errorf("declined %.200s", body)
		}
		for _, opts := range allDecodeOptions {
			checkSameAsSlow(t, []byte(body), opts)
		}
	}
	for _, body := range []string{
		chatBody(`"tools":[]`), chatBody(`"stop":"x"`), chatBody(`"nvext":{}`), chatBody(`"foo":1`),
		chatBody(`"Temperature":1`), chatBody(`"max_tokens":1.5`), chatBody(`"stream_options":{"x":true}`),
		chatBody(`"model":"\ud83d\ude00"`),
	} {
		var r ChatCompletionRequest
		if decodeChatTopStrict(rest(body), &r) {
			t.Errorf("taken for %.200s", body)
		}
		for _, opts := range allDecodeOptions {
			checkSameAsSlow(t, []byte(body), opts)
		}
	}
}
