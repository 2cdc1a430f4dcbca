package reasoning

import "testing"

// Cases restated from Dynamo base_parser.rs / mod.rs tests and vLLM's
// test_deepseekr1_reasoning_parser.py (whitespace as the streaming path
// gives it: nothing trimmed).

func TestDeepSeekR1(t *testing.T) {
	runGolden(t, "deepseek_r1", []golden{
		{name: "simple", text: "This is a reasoning section</think>This is the rest",
			reasoning: "This is a reasoning section", content: "This is the rest"},
		{name: "complete reasoning, no answer", text: "This is a reasoning section</think>",
			reasoning: "This is a reasoning section"},
		{name: "no end marker is all reasoning", text: "This is content", reasoning: "This is content"},
		{name: "multiple lines", text: "This\nThat</think>This is the rest\nThat",
			reasoning: "This\nThat", content: "This is the rest\nThat"},
		{name: "shortest", text: "</think>This is the rest", content: "This is the rest"},
		{name: "leading think dropped", text: "<think>This is a reasoning section</think>This is the rest",
			reasoning: "This is a reasoning section", content: "This is the rest"},
		{name: "think without end", text: "<think>This is a reasoning section", reasoning: "This is a reasoning section"},
		{name: "empty", text: ""},
		{name: "newline before think", text: "\n<think>This is a reasoning section</think>\nThis is the rest",
			reasoning: "This is a reasoning section", content: "\nThis is the rest"},
		{name: "whitespace after end kept", text: "Okay.</think>\n\nParis.", reasoning: "Okay.", content: "\n\nParis."},
		{name: "second block interleaved", text: "initial</think> answer<think>second thought</think> done",
			reasoning: "initialsecond thought", content: " answer done"},
		{name: "empty block", text: "<think></think>Hello from instant mode!", content: "Hello from instant mode!"},
		{name: "partial closer is text", text: "abc</thing>def</think>done", reasoning: "abc</thing>def", content: "done"},
		{name: "off: all content", off: true, text: "This is a reasoning section</think>This is the rest",
			content: "This is a reasoning section</think>This is the rest"},
		{name: "off: complete explicit block still split", off: true, text: "<think>\n\n</think>\n\nHi",
			reasoning: "\n\n", content: "\n\nHi"},
		{name: "off: incomplete block is content as written", off: true, text: "\n<think>never closed",
			content: "\n<think>never closed"},
	})
}

func TestQwen3AndBasic(t *testing.T) {
	cases := []golden{
		{name: "block then answer", text: "<think>with reasoning</think> and more text.",
			reasoning: "with reasoning", content: " and more text."},
		{name: "no think is content", text: "This is a test without reasoning.", content: "This is a test without reasoning."},
		{name: "truncated reasoning", text: "<think>with truncated reasoning", reasoning: "with truncated reasoning"},
		{name: "leading whitespace dropped with marker", text: " \n<think>r</think>c", reasoning: "r", content: "c"},
		{name: "think not at start is content", text: "The answer is <think>x</think>",
			content: "The answer is <think>x</think>"},
		{name: "end without start is content", text: "reasoning</think>answer", content: "reasoning</think>answer"},
		{name: "multiple blocks", text: "<think>first reasoning</think> middle <think>second reasoning</think> end",
			reasoning: "first reasoningsecond reasoning", content: " middle  end"},
		{name: "nested opener is reasoning text", text: "<think>first <think>second reasoning</think> normal",
			reasoning: "first <think>second reasoning", content: " normal"},
		{name: "tool calls between blocks", text: "<think>T1</think><tool_call>A</tool_call><think>T2</think><tool_call>B</tool_call>",
			reasoning: "T1T2", content: "<tool_call>A</tool_call><tool_call>B</tool_call>"},
		{name: "whitespace-only block", text: "<think>   \n\t  </think> normal text", reasoning: "   \n\t  ", content: " normal text"},
		{name: "off: empty block split out", off: true, text: "<think>\n\n</think>\n\nHello", reasoning: "\n\n", content: "\n\nHello"},
		{name: "off: no block", off: true, text: "Hello", content: "Hello"},
		{name: "off: unclosed block is content", off: true, text: "<think>hmm", content: "<think>hmm"},
	}
	runGolden(t, "qwen3", cases)
	runGolden(t, "basic", cases)
	runGolden(t, "glm45", cases)
}

func TestKimi(t *testing.T) {
	runGolden(t, "kimi", []golden{
		{name: "unicode markers", text: "◁think▷Let me see◁/think▷Hi", reasoning: "Let me see", content: "Hi"},
		{name: "think tags are text", text: "<think>reasoning</think>answer", content: "<think>reasoning</think>answer"},
		{name: "stray closer is text", text: "normal◁/think▷answer", content: "normal◁/think▷answer"},
	})
	runGolden(t, "kimi_k25", []golden{
		{name: "forced", text: "no think tags here", reasoning: "no think tags here"},
		{name: "standard", text: "<think>Let me reason about this.</think>Hello!", reasoning: "Let me reason about this.", content: "Hello!"},
		{name: "instant mode", text: "<think>\n</think>Hello from instant mode!", reasoning: "\n", content: "Hello from instant mode!"},
		{name: "tool section ends reasoning",
			text:      "thinking text <|tool_calls_section_begin|><|tool_call_begin|>functions.foo:0<|tool_call_argument_begin|>{}<|tool_call_end|><|tool_calls_section_end|>",
			reasoning: "thinking text ",
			content:   "<|tool_calls_section_begin|><|tool_call_begin|>functions.foo:0<|tool_call_argument_begin|>{}<|tool_call_end|><|tool_calls_section_end|>"},
		{name: "tool section after answer", text: "reasoning</think>answer <|tool_calls_section_begin|>tc",
			reasoning: "reasoning", content: "answer <|tool_calls_section_begin|>tc"},
	})
}

func TestMistral(t *testing.T) {
	runGolden(t, "mistral", []golden{
		{name: "explicit block", text: "[THINK]Let me think.[/THINK]Answer.", reasoning: "Let me think.", content: "Answer."},
		{name: "forced", text: "Let me think.[/THINK]Answer.", reasoning: "Let me think.", content: "Answer."},
		{name: "truncated", text: "[THINK]still going", reasoning: "still going"},
		{name: "off", off: true, text: "Answer.", content: "Answer."},
	})
	if !mustLookup(t, "mistral").NeedsSpecialTokens() {
		t.Error("mistral: [THINK] is a special token the decoder must keep")
	}
}

// Cases restated from vLLM test_granite_reasoning_parser.py and Dynamo
// granite_parser.rs.
func TestGranite(t *testing.T) {
	const think, respond = "Here is my thought process:", "Here is my response:"
	runGolden(t, "granite", []golden{
		{name: "simple", text: think + "This is a reasoning section" + respond + "This is the rest",
			reasoning: "This is a reasoning section", content: "This is the rest"},
		{name: "complete reasoning", text: think + "This is a reasoning section" + respond, reasoning: "This is a reasoning section"},
		{name: "no reasoning", text: "This is content", content: "This is content"},
		{name: "multiple lines", text: think + "This\nThat" + respond + "This is the rest\nThat",
			reasoning: "This\nThat", content: "This is the rest\nThat"},
		{name: "Here's variants", text: "Here's my thought process: I need to think about this. Here's my response: The answer is 42.",
			reasoning: " I need to think about this. ", content: " The answer is 42."},
		{name: "mixed variants", text: "Here's my thought process: First reasoning. Here is my response: Mixed.",
			reasoning: " First reasoning. ", content: " Mixed."},
		{name: "case sensitive", text: "here's my thought process: lowercase. here's my response: answer.",
			content: "here's my thought process: lowercase. here's my response: answer."},
		{name: "only start", text: "Here's my thought process: no end marker.", reasoning: " no end marker."},
		{name: "first response marker ends it", text: think + " Thinking about " + respond + " in the middle. " + respond + " Real end.",
			reasoning: " Thinking about ", content: " in the middle. " + respond + " Real end."},
		{name: "repeated start is reasoning text", text: think + " I think " + think + " is confusing. " + respond + " Done.",
			reasoning: " I think " + think + " is confusing. ", content: " Done."},
		{name: "broken start is content", text: "Here is my thought failure", content: "Here is my thought failure"},
	})
}
