package toolcall_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/dynamo-go/dynamo/pkg/preprocessor/toolcall"
)

// step is one delta of a transcript and what Push must return for it; the
// last step with push == "" is Finish.
type step struct {
	push    string
	content string
	calls   []toolcall.Call
}

func runTranscript(t *testing.T, parser string, steps []step) {
	t.Helper()
	p, err := toolcall.Lookup(parser)
	if err != nil {
		t.Fatal(err)
	}
	s := p.NewStream(nil)
	for i, st := range steps {
		var content string
		var calls []toolcall.Call
		if i == len(steps)-1 && st.push == "" {
			content, calls = s.Finish()
		} else {
			content, calls = s.Push(st.push)
		}
		if content != st.content {
			t.Errorf("step %d Push(%q): content %q, want %q", i, st.push, content, st.content)
		}
		if diff := cmp.Diff(st.calls, calls, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("step %d Push(%q): calls (-want +got):\n%s", i, st.push, diff)
		}
	}
}

func TestHermesTranscript(t *testing.T) {
	runTranscript(t, "hermes", []step{
		{push: "Let me ", content: "Let me "},
		{push: "check <", content: "check "}, // "<" may start <tool_call>
		{push: "tool_", content: ""},
		{push: `call>{"name": "get_`, content: ""},
		{push: `weather", "arguments": {"city": "Pa`, content: ""},
		{push: `ris"}}` + "\n", content: ""},
		{push: "</tool_call>", calls: []toolcall.Call{call("get_weather", weatherParis)}},
		{push: " Anything", content: " Anything"},
		{push: " else? <tool", content: " else? "},
		{push: "box> 🌤", content: "<toolbox> 🌤"}, // not a marker after all
		{push: "\xf0\x9f", content: ""},          // half an emoji waits for the rest
		{push: "\x8c\xa4", content: "🌤"},
		{push: " <tool_call>{\"name\": \"x\"", content: " "},
		{push: "", content: `<tool_call>{"name": "x"`}, // Finish: unterminated call is content
	})
}

func TestHarmonyTranscript(t *testing.T) {
	runTranscript(t, "harmony", []step{
		{push: "<|channel|>analysis<|message|>The user", content: ""},
		{push: " wants weather.<|end|>", content: ""},
		{push: "<|start|>assistant<|channel|>commentary<|message|>Checking", content: "Checking"},
		{push: " now.<|e", content: " now."},
		{push: "nd|><|start|>assistant<|channel|>commentary to=functions.get_weather", content: ""},
		{push: " <|constrain|>json<|message|>{\"city\":", content: ""},
		{push: "\"Paris\"}", content: ""},
		{push: "<|call|>", calls: []toolcall.Call{call("get_weather", weatherParis)}},
		{push: "<|start|>assistant<|channel|>final<|message|>It is ", content: "It is "},
		{push: "sunny <", content: "sunny "},
		{push: "3 <|", content: "<3 "},
		{push: "return|>", content: ""},
		{push: "", content: ""},
	})
}

// TestPlainTextIsReleasedAtOnce: text that holds no marker, nor the start
// of one at its end, comes back from the same Push, for every parser.
func TestPlainTextIsReleasedAtOnce(t *testing.T) {
	const text = "The weather in Paris is sunny, 20 °C [source: météo]."
	for _, name := range toolcall.Names() {
		p, _ := toolcall.Lookup(name)
		s := p.NewStream([]string{"get_weather"})
		if content, calls := s.Push(text); content != text || len(calls) != 0 {
			t.Errorf("%s: Push released %q and %d calls, want all the text", name, content, len(calls))
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
		p, _ := toolcall.Lookup(tt.parser)
		s := p.NewStream(nil)
		if got, _ := s.Push(tt.first); got != tt.want1 {
			t.Errorf("%s: Push(%q) = %q, want %q", tt.parser, tt.first, got, tt.want1)
		}
		if got, _ := s.Push(tt.second); got != tt.want2 {
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
	}
	for _, tt := range tests {
		p, _ := toolcall.Lookup(tt.parser)
		s := p.NewStream(nil)
		for i, in := range tt.pushes {
			if got, _ := s.Push(in); got != tt.wants[i] {
				t.Errorf("%s: Push(%q) = %q, want %q", tt.parser, in, got, tt.wants[i])
			}
		}
	}
}
