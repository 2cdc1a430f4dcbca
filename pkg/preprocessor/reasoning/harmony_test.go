package reasoning

import "testing"

// Cases restated from Dynamo gpt_oss_parser.rs and vLLM
// test_gptoss_reasoning_parser.py.
func TestGptOss(t *testing.T) {
	const call = "<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\":\"Paris\"}<|call|>"
	runGolden(t, "gpt_oss", []golden{
		{name: "analysis then final",
			text:      "<|channel|>analysis<|message|>The user asks a simple factual question: capital of Brazil.<|end|><|start|>assistant<|channel|>final<|message|>The capital of Brazil is Brasília.",
			reasoning: "The user asks a simple factual question: capital of Brazil.", content: "The capital of Brazil is Brasília."},
		{name: "final alone", text: "<|channel|>final<|message|>answer", content: "answer"},
		{name: "final ends at return", text: "<|channel|>final<|message|>answer<|return|>", content: "answer"},
		{name: "two analysis messages joined by newline",
			text:      "<|channel|>analysis<|message|>first<|end|><|start|>assistant<|channel|>analysis<|message|>second<|end|><|start|>assistant<|channel|>final<|message|>done",
			reasoning: "first\nsecond", content: "done"},
		{name: "analysis only", text: "<|channel|>analysis<|message|>This is reasoning<|end|>", reasoning: "This is reasoning"},
		{name: "final with constrain header", text: "<|channel|>analysis<|message|>r<|end|><|start|>assistant<|channel|>final <|constrain|>json<|message|>{\"a\":1}",
			reasoning: "r", content: "{\"a\":1}"},
		{name: "tool call passes through verbatim",
			text:      "<|channel|>analysis<|message|>Need the weather.<|end|>" + call,
			reasoning: "Need the weather.", content: call},
		{name: "recipient before channel",
			text:      "<|channel|>analysis<|message|>x<|end|><|start|>assistant to=functions.f<|channel|>commentary json<|message|>{}<|call|>",
			reasoning: "x", content: "<|start|>assistant to=functions.f<|channel|>commentary json<|message|>{}<|call|>"},
		{name: "recipient right after the generation prompt", text: " to=functions.f<|channel|>commentary json<|message|>{}<|call|>",
			content: " to=functions.f<|channel|>commentary json<|message|>{}<|call|>"},
		{name: "unterminated tool call", text: "<|channel|>commentary to=functions.f <|constrain|>json<|message|>{\"a\"",
			content: "<|channel|>commentary to=functions.f <|constrain|>json<|message|>{\"a\""},
		{name: "implicit analysis at start", text: "Thinking.<|end|><|start|>assistant<|channel|>final<|message|>Done.",
			reasoning: "Thinking.", content: "Done."},
		{name: "incomplete header dropped", text: "<|channel|>analysis<|message|>r<|end|><|start|>assistant", reasoning: "r"},
		{name: "off: complete analysis still split", off: true,
			text:      "<|channel|>analysis<|message|>r<|end|><|start|>assistant<|channel|>final<|message|>c",
			reasoning: "r", content: "c"},
		{name: "off: unclosed analysis is content as written", off: true,
			text: "<|channel|>analysis<|message|>hmm", content: "<|channel|>analysis<|message|>hmm"},
		{name: "off: no markers is content", off: true, text: "plain", content: "plain"},
	})
	if !mustLookup(t, "gpt_oss").NeedsSpecialTokens() {
		t.Error("gpt_oss: harmony markers are special tokens the decoder must keep")
	}
}
