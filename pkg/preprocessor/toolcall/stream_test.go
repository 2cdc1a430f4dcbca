package toolcall_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/dynamo-go/dynamo/pkg/preprocessor/toolcall"
)

// step is one delta of a transcript and the deltas Push must return for
// it; a last step with finish set is Finish.
type step struct {
	push   string
	finish bool
	want   []toolcall.Delta
}

// text, begin and args build expected deltas: content, a call's first
// delta, and a later fragment of call i's arguments.
func text(s string) toolcall.Delta { return toolcall.Delta{Content: s} }

func begin(i int, name, arguments string) toolcall.Delta {
	return toolcall.Delta{Call: &toolcall.CallDelta{Index: i, Name: name, Arguments: arguments}}
}

func args(i int, arguments string) toolcall.Delta {
	return toolcall.Delta{Call: &toolcall.CallDelta{Index: i, Arguments: arguments}}
}

func runTranscript(t *testing.T, parser string, tools []string, steps []step) {
	t.Helper()
	s := lookup(t, parser).NewStream(tools)
	for i, st := range steps {
		var got []toolcall.Delta
		if st.finish {
			got = s.Finish()
		} else {
			got = s.Push(st.push)
		}
		if diff := cmp.Diff(st.want, got, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%s step %d Push(%q) (-want +got):\n%s", parser, i, st.push, diff)
		}
	}
}

// The transcripts are ours; the formats, and where a call may be
// recognised, follow the reference system's and vLLM's parser tests
// (see the package doc). Each shows text released at once, a marker (or
// the start of one) held, a call held until it is known to be one (its
// name, and its arguments up to the first byte of the first value), then
// argument fragments as they come, and text after it.

func TestHermesTranscript(t *testing.T) {
	runTranscript(t, "hermes", nil, []step{
		{push: "Let me ", want: []toolcall.Delta{text("Let me ")}},
		{push: "check <", want: []toolcall.Delta{text("check ")}}, // "<" may start <tool_call>
		{push: "tool_"},
		{push: `call>{"name": "get_`},
		{push: `weather", "arguments": {"ci`},
		{push: `ty": "Pa`, want: []toolcall.Delta{begin(0, "get_weather", `{"city":"Pa`)}}, // committed
		{push: `ris", "days": `, want: []toolcall.Delta{args(0, `ris","days":`)}},
		{push: `3}}` + "\n", want: []toolcall.Delta{args(0, `3}`)}},
		{push: "</tool_call>"}, // the rest of the block
		{push: " Anything", want: []toolcall.Delta{text(" Anything")}},
		{push: " else? <tool", want: []toolcall.Delta{text(" else? ")}},
		{push: "box> 🌤", want: []toolcall.Delta{text("<toolbox> 🌤")}}, // not a marker after all
		{push: "\xf0\x9f"}, // half an emoji waits for the rest
		{push: "\x8c\xa4", want: []toolcall.Delta{text("🌤")}},
		{push: " <tool_call>{\"name\": \"x\"", want: []toolcall.Delta{text(" ")}},
		{finish: true, want: []toolcall.Delta{text(`<tool_call>{"name": "x"`)}}, // never committed: content
	})
	runTranscript(t, "qwen25", nil, []step{
		{push: `<tool_call>{"name": "f", "arguments": {"s": "é`, want: []toolcall.Delta{begin(0, "f", `{"s":"é`)}},
		{push: "\xe2\x98", want: nil}, // half of ☀ inside the arguments waits too
		{push: "\x80\"}}</tool_call><tool_call>{\"name\": \"g\"}</tool_call>",
			want: []toolcall.Delta{args(0, `☀"}`), begin(1, "g", "{}")}},
		{finish: true},
	})
}

func TestLlama3JSONTranscript(t *testing.T) {
	runTranscript(t, "llama3_json", []string{"searchTool", "getOpenIncidentsTool"}, []step{
		{push: " "}, // the output may start with a call
		{push: `{"name": "searchTool", "param`},
		{push: `eters": {"query": "te`, want: []toolcall.Delta{begin(0, "searchTool", `{"query":"te`)}},
		{push: `st"}} ; `, want: []toolcall.Delta{args(0, `st"}`)}},
		{push: `{"name": "getOpenIncidentsTool", "parameters": {}};`, want: []toolcall.Delta{begin(1, "getOpenIncidentsTool", "{}")}},
		{push: ` no more`, want: []toolcall.Delta{text("; no more")}}, // a ';' not followed by a call is text
		{push: ` <|python_ta`, want: []toolcall.Delta{text(" ")}},
		{push: `g|>{"name": "searchTool", "parameters": {"limit": 10}}`, want: []toolcall.Delta{begin(2, "searchTool", `{"limit":10}`)}},
		{finish: true},
	})
	// Plain JSON that does not call a declared function is content.
	runTranscript(t, "llama3_json", []string{"searchTool"}, []step{
		{push: `{"name": "Ad`},
		{push: `a", "age": 36}`, want: []toolcall.Delta{text(`{"name": "Ada", "age": 36}`)}},
		{finish: true},
	})
}

func TestMistralTranscript(t *testing.T) {
	runTranscript(t, "mistral", nil, []step{
		{push: "Checking. [TOOL_", want: []toolcall.Delta{text("Checking. ")}},
		{push: "CALLS]get_wea"},
		{push: "ther[AR"},
		{push: `GS]{"city": `},
		{push: `"Paris", "unit": "c`, want: []toolcall.Delta{begin(0, "get_weather", `{"city":"Paris","unit":"c`)}},
		{push: `elsius"}[TOOL_CALLS]add{"a": 3.5`, want: []toolcall.Delta{args(0, `elsius"}`), begin(1, "add", `{"a":3.5`)}},
		{push: `, "b": 4}`, want: []toolcall.Delta{args(1, `,"b":4}`)}},
		{finish: true},
	})
	runTranscript(t, "mistral", nil, []step{
		{push: `[TOOL_CALLS] [{"name": "add", "arguments": {"a": 1}}, `, want: []toolcall.Delta{begin(0, "add", `{"a":1}`)}},
		{push: `{"arguments": {"b": 2}, `}, // arguments before the name are held
		{push: `"name": "sub"}]`, want: []toolcall.Delta{begin(1, "sub", `{"b":2}`)}},
		{push: ` [/TOOL_CALLS] ok`, want: []toolcall.Delta{text(" ok")}},
		{finish: true},
	})
}

func TestPythonicTranscript(t *testing.T) {
	// Python literals become JSON only once the list is complete: calls
	// come whole.
	runTranscript(t, "pythonic", []string{"get_weather", "get_time"}, []step{
		{push: "[get_weather(city="},
		{push: "'Paris', days=3), get_time"},
		{push: "(tz=None)]", want: []toolcall.Delta{begin(0, "get_weather", `{"city":"Paris","days":3}`), begin(1, "get_time", `{"tz":null}`)}},
		{push: "\nDone.", want: []toolcall.Delta{text("\nDone.")}},
		{finish: true},
	})
	runTranscript(t, "pythonic", nil, []step{
		{push: "Here: <|python_", want: []toolcall.Delta{text("Here: ")}},
		{push: "start|>[f(x=[1, 2])]"},
		{push: "<|python_end|> ok", want: []toolcall.Delta{begin(0, "f", `{"x":[1,2]}`), text(" ok")}},
		{finish: true},
	})
}

func TestPhi4Transcript(t *testing.T) {
	runTranscript(t, "phi4", nil, []step{
		{push: "Calling: func", want: []toolcall.Delta{text("Calling: ")}},
		{push: "tools["},
		{push: `{"name": "get_weather", "arguments": {"city": "P`, want: []toolcall.Delta{begin(0, "get_weather", `{"city":"P`)}},
		{push: `aris"}}, {"name": "get_time", "arguments": {}}`, want: []toolcall.Delta{args(0, `aris"}`), begin(1, "get_time", "{}")}},
		{push: "] done", want: []toolcall.Delta{text(" done")}},
		{finish: true},
	})
	runTranscript(t, "phi4", nil, []step{
		{push: "I like functools", want: []toolcall.Delta{text("I like ")}},
		{push: " in Python.", want: []toolcall.Delta{text("functools in Python.")}},
		{finish: true},
	})
}

func TestDeepSeekV3Transcript(t *testing.T) {
	runTranscript(t, "deepseek_v3", nil, []step{
		{push: "Checking.<｜tool▁calls", want: []toolcall.Delta{text("Checking.")}},
		{push: "▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_wea"},
		{push: "ther\n```json\n{\"city\": \"P", want: []toolcall.Delta{begin(0, "get_weather", `{"city":"P`)}},
		{push: "aris\"}\n```<｜tool▁call▁end｜>", want: []toolcall.Delta{args(0, `aris"}`)}},
		{push: "\n<｜tool▁call▁begin｜>function<｜tool▁sep｜>get_time\n```json\n{}\n```<｜tool▁call▁end｜>",
			want: []toolcall.Delta{begin(1, "get_time", "{}")}},
		{push: "<｜tool▁calls▁end｜> ok", want: []toolcall.Delta{text(" ok")}},
		{finish: true},
	})
	runTranscript(t, "deepseek_v3_1", nil, []step{
		{push: "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_time<｜tool▁sep｜>{\"tz\": \"東", want: []toolcall.Delta{begin(0, "get_time", `{"tz":"東`)}},
		{push: "京\"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>", want: []toolcall.Delta{args(0, `京"}`)}},
		{finish: true},
	})
}

func TestQwen3CoderTranscript(t *testing.T) {
	// XML parameters become JSON only at the end of the block: calls come
	// whole.
	runTranscript(t, "qwen3_coder", nil, []step{
		{push: "I'll check.\n<tool_", want: []toolcall.Delta{text("I'll check.\n")}},
		{push: "call>\n<function=get_weather>\n<parameter=city>\nPar"},
		{push: "is\n</parameter>\n<parameter=days>\n3\n</parameter>\n</function>\n"},
		{push: "</tool_call>", want: []toolcall.Delta{begin(0, "get_weather", `{"city":"Paris","days":3}`)}},
		{push: "\nok", want: []toolcall.Delta{text("\nok")}},
		{finish: true},
	})
}

func TestHarmonyTranscript(t *testing.T) {
	runTranscript(t, "harmony", nil, []step{
		{push: "<|channel|>analysis<|message|>The user"},
		{push: " wants weather.<|end|>"},
		{push: "<|start|>assistant<|channel|>commentary<|message|>Checking", want: []toolcall.Delta{text("Checking")}},
		{push: " now.<|e", want: []toolcall.Delta{text(" now.")}},
		{push: "nd|><|start|>assistant<|channel|>commentary to=functions.get_weather"},
		{push: " <|constrain|>json<|message|>{\"city\":"},
		{push: "\"Par", want: []toolcall.Delta{begin(0, "get_weather", `{"city":"Par`)}},
		{push: "is\"}<|ca", want: []toolcall.Delta{args(0, `is"}`)}},
		{push: "ll|>"},
		{push: "<|start|>assistant<|channel|>final<|message|>It is ", want: []toolcall.Delta{text("It is ")}},
		{push: "sunny <", want: []toolcall.Delta{text("sunny ")}},
		{push: "3 <|", want: []toolcall.Delta{text("<3 ")}},
		{push: "return|>"},
		{finish: true},
	})
}

func TestGuidedTranscript(t *testing.T) {
	runTranscript(t, "required", nil, []step{
		{push: `[{"name": "get_weather", "parameters": {"city": "Os`, want: []toolcall.Delta{begin(0, "get_weather", `{"city":"Os`)}},
		{push: `lo"}}, {"name": "get_time", "parameters": {}}]`, want: []toolcall.Delta{args(0, `lo"}`), begin(1, "get_time", "{}")}},
		{push: "\n"},
		{finish: true},
	})
	runTranscript(t, "named:get_weather", nil, []step{
		{push: `{"ci`},
		{push: `ty": "Lima", `, want: []toolcall.Delta{begin(0, "get_weather", `{"city":"Lima",`)}},
		{push: `"unit": "celsius"}`, want: []toolcall.Delta{args(0, `"unit":"celsius"}`)}},
		{finish: true},
	})
}

// TestPlainTextIsReleasedAtOnce: text that holds no marker, nor the start
// of one at its end, comes back from the same Push, for every parser.
func TestPlainTextIsReleasedAtOnce(t *testing.T) {
	const plain = "The weather in Paris is sunny, 20 °C [source: météo]."
	for _, name := range toolcall.Names() {
		p, _ := toolcall.Lookup(name)
		s := p.NewStream([]string{"get_weather"})
		if got := s.Push(plain); len(got) != 1 || got[0].Content != plain {
			t.Errorf("%s: Push released %s, want all the text", name, show(got))
		}
	}
}

// TestMarkerPrefixThatIsNot: a Push ending in what could start a marker
// holds it back; the next Push shows it is not one and releases it.
func TestMarkerPrefixThatIsNot(t *testing.T) {
	tests := []struct {
		parser, first, second, want1, want2 string
	}{
		{"hermes", "a <tool_c", "ar> b", "a ", "<tool_car> b"},
		{"qwen3_coder", "<tool_", "call_me> b", "", "<tool_call_me> b"},
		{"llama3_json", "a <|python", "_end|>", "a ", "<|python_end|>"},
		{"mistral", "see [TOOL", "S] list", "see ", "[TOOLS] list"},
		{"pythonic", "x <|python_", "tag|>", "x ", "<|python_tag|>"},
		{"phi4", "import func", "tions", "import ", "functions"},
		{"deepseek_v3", "x <｜tool", "box｜>", "x ", "<｜toolbox｜>"},
		{"harmony", "x <|chan", "ge|>", "x ", "<|change|>"},
		{"default", "x <TOOL", "BOX>", "x ", "<TOOLBOX>"},
	}
	for _, tt := range tests {
		s := lookup(t, tt.parser).NewStream(nil)
		if got, _ := toolcall.Fold(s.Push(tt.first)); got != tt.want1 {
			t.Errorf("%s: Push(%q) = %q, want %q", tt.parser, tt.first, got, tt.want1)
		}
		if got, _ := toolcall.Fold(s.Push(tt.second)); got != tt.want2 {
			t.Errorf("%s: Push(%q) = %q, want %q", tt.parser, tt.second, got, tt.want2)
		}
	}
}

// TestLeadingTextDecidesPromptly: parsers that look for an unmarked call
// at the start of the output hold only until the start rules one out.
func TestLeadingTextDecidesPromptly(t *testing.T) {
	tests := []struct {
		parser string
		pushes []string
		wants  []string
	}{
		{"llama3_json", []string{"\n", " Sure"}, []string{"", "\n Sure"}},
		{"pythonic", []string{"[get", "_weather is", " a tool"}, []string{"", "[get_weather is", " a tool"}},
		{"pythonic", []string{"[get_weather(", "city='Paris')]", " ok"}, []string{"", "", " ok"}},
		{"required", []string{" ", "Sorry"}, []string{"", " Sorry"}},
	}
	for _, tt := range tests {
		s := lookup(t, tt.parser).NewStream(nil)
		for i, in := range tt.pushes {
			if got, _ := toolcall.Fold(s.Push(in)); got != tt.wants[i] {
				t.Errorf("%s: Push(%q) = %q, want %q", tt.parser, in, got, tt.wants[i])
			}
		}
	}
}

// TestArgumentsStreamAsTheyCome feeds each JSON-bodied format a call
// byte by byte: the call begins before its text is complete, and its
// arguments come in many fragments. Pythonic and qwen3_coder calls come
// whole.
func TestArgumentsStreamAsTheyCome(t *testing.T) {
	const value = `{"path": "a.txt", "text": "one two three four five six seven eight"}`
	outputs := map[string]string{
		"hermes":        `<tool_call>{"name": "write", "arguments": ` + value + `}</tool_call>`,
		"llama3_json":   `{"name": "write", "parameters": ` + value + `}`,
		"mistral":       `[TOOL_CALLS]write[ARGS]` + value,
		"phi4":          `functools[{"name": "write", "arguments": ` + value + `}]`,
		"deepseek_v3":   "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>write\n```json\n" + value + "\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
		"deepseek_v3_1": "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>write<｜tool▁sep｜>" + value + "<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
		"harmony":       `<|channel|>commentary to=functions.write <|constrain|>json<|message|>` + value + `<|call|>`,
		"default":       `<TOOLCALL>[{"name": "write", "arguments": ` + value + `}]</TOOLCALL>`,
		"required":      `[{"name": "write", "parameters": ` + value + `}]`,
		"named:write":   value,
		"pythonic":      `[write(path="a.txt", text="one two three four five six seven eight")]`,
		"qwen3_coder":   "<tool_call>\n<function=write>\n<parameter=path>\na.txt\n</parameter>\n<parameter=text>\none two three four five six seven eight\n</parameter>\n</function>\n</tool_call>",
	}
	for name, out := range outputs {
		s := lookup(t, name).NewStream(nil)
		var all []toolcall.Delta
		firstAt := -1
		for i := range len(out) {
			ds := s.Push(out[i : i+1])
			if len(ds) > 0 && firstAt < 0 {
				firstAt = i
			}
			all = append(all, ds...)
		}
		all = append(all, s.Finish()...)
		content, calls := toolcall.Fold(all)
		if content != "" || len(calls) != 1 || calls[0].Name != "write" {
			t.Errorf("%s: content %q, calls %v", name, content, calls)
			continue
		}
		whole := name == "pythonic" || name == "qwen3_coder"
		switch {
		case whole && len(all) != 1:
			t.Errorf("%s: %d deltas, want the call whole: %s", name, len(all), show(all))
		case !whole && len(all) < 20:
			t.Errorf("%s: %d deltas, want the arguments in fragments: %s", name, len(all), show(all))
		case !whole && firstAt > strings.Index(out, "four"):
			t.Errorf("%s: the call began at byte %d of %d, after its arguments' text began", name, firstAt, len(out))
		}
	}
}
