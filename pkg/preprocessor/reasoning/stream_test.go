package reasoning

import (
	"math/rand"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestDeepSeekR1Transcript(t *testing.T) {
	runTranscript(t, "deepseek_r1", true, []step{
		{in: "<thi"},                                      // may be the optional leading <think>
		{in: "nk>Let me", reasoning: "Let me"},            // it was: dropped
		{in: " think</th", reasoning: " think"},           // </th held back
		{in: "ing>, still", reasoning: "</thing>, still"}, // not a marker after all
		{in: "</think>\n\nHi", content: "\n\nHi"},
		{in: "<"},                  // a block may open again: < is held
		{in: "b>", content: "<b>"}, // and released once it cannot be <think>
		{in: " <", content: " "},
		{in: finish, content: "<"},
	})
}

func TestDeepSeekR1TranscriptHeldOpenerReleased(t *testing.T) {
	runTranscript(t, "deepseek_r1", true, []step{
		{in: "<th"},
		{in: "is is reasoning", reasoning: "<this is reasoning"},
		{in: "</think>", reasoning: ""},
		{in: "Answer <thi", content: "Answer "},
		{in: finish, content: "<thi"},
	})
}

func TestQwen3Transcript(t *testing.T) {
	runTranscript(t, "qwen3", true, []step{
		{in: "\n"}, // whitespace before a possible <think>
		{in: "<think>", reasoning: ""},
		{in: "I need to", reasoning: "I need to"},
		{in: " think about", reasoning: " think about"},
		{in: " this carefully.</", reasoning: " this carefully."},
		{in: "think>", reasoning: ""},
		{in: "\n\nBonjour", content: "\n\nBonjour"},
		{in: "!", content: "!"},
		{in: finish},
	})
	runTranscript(t, "qwen3", true, []step{
		{in: "<"},
		{in: "b>bold</b>", content: "<b>bold</b>"},
		{in: " <think>not a block", content: " <think>not a block"}, // content after plain text has no markers
		{in: finish},
	})
	runTranscript(t, "qwen3", false, []step{
		{in: "<think>\n\n"}, // held: thinking is off, the block must close to count
		{in: "</think>\n\n", reasoning: "\n\n", content: "\n\n"},
		{in: "Hello", content: "Hello"},
		{in: finish},
	})
}

func TestGptOssTranscript(t *testing.T) {
	runTranscript(t, "gpt_oss", true, []step{
		{in: "<|chan"},
		{in: "nel|>"},
		{in: "analysis<|message|>The user asks", reasoning: "The user asks"},
		{in: " about Brazil.<|e", reasoning: " about Brazil."},
		{in: "nd|><|start|>assistant<|channel|>final<|message|>"},
		{in: "Brasília.", content: "Brasília."},
		{in: "<|return|>"},
		{in: finish},
	})
	runTranscript(t, "gpt_oss", true, []step{
		{in: "<|channel|>analysis<|message|>Use the tool.<|end|>", reasoning: "Use the tool."},
		{in: "<|start|>assistant<|channel|>commentary to=functions.get_system_health <|constrain|>json"},
		{in: "<|message|>", content: "<|start|>assistant<|channel|>commentary to=functions.get_system_health <|constrain|>json<|message|>"},
		{in: "{}<|ca", content: "{}"},
		{in: "ll|>", content: "<|call|>"},
		{in: finish},
	})
	runTranscript(t, "gpt_oss", true, []step{
		{in: "<|channel|>final<|message|>answer<|e", content: "answer"},
		{in: finish, content: "<|e"},
	})
}

// Granite writes its reasoning between two phrases, in either spelling;
// a phrase split across deltas is held until it is whole or cannot be.
// Facts from vLLM's test_granite_reasoning_parser.py (streaming cases).
func TestGraniteTranscript(t *testing.T) {
	runTranscript(t, "granite", true, []step{
		{in: "Here's my"}, // may be the start phrase
		{in: " thought process:"},
		{in: " 9.11 has more digits,", reasoning: " 9.11 has more digits,"},
		{in: " but 9.8 is larger. Here", reasoning: " but 9.8 is larger. "}, // may end it
		{in: "'s my resp"},
		{in: "onse: 9.8 is", content: " 9.8 is"},
		{in: " greater. Here is my response: no", content: " greater. Here is my response: no"}, // no markers after the block
		{in: finish},
	})
	runTranscript(t, "granite", true, []step{
		{in: "Here is my thou"},
		{in: "ght failure", content: "Here is my thought failure"}, // not the phrase after all
		{in: " Here is my thought process: late", content: " Here is my thought process: late"},
		{in: finish},
	})
	runTranscript(t, "granite", true, []step{
		{in: "Here is my thought process:"},
		{in: " still thinking when cut", reasoning: " still thinking when cut"},
		{in: " Here is my", reasoning: " "},
		{in: finish, reasoning: "Here is my"}, // a partial phrase at the end is reasoning text
	})
}

// Mistral's [THINK] block: the prompt may open it (forced), it may open
// again later, and its markers are special tokens (kept for the parser).
// Facts from vLLM's test_mistral_reasoning_parser.py.
func TestMistralTranscript(t *testing.T) {
	runTranscript(t, "mistral", true, []step{
		{in: "[THI"},
		{in: "NK]Let me", reasoning: "Let me"},
		{in: " count: 1, 2[/TH", reasoning: " count: 1, 2"},
		{in: "INK]"},
		{in: "Three.[THINK]Check", content: "Three.", reasoning: "Check"},
		{in: "ed.[/THINK] Done", reasoning: "ed.", content: " Done"},
		{in: finish},
	})
	runTranscript(t, "mistral", true, []step{
		{in: "Forced", reasoning: "Forced"}, // the prompt opened the block
		{in: " open.[/THINK]", reasoning: " open."},
		{in: "Answer [/THINK]", content: "Answer [/THINK]"},
		{in: finish},
	})
	runTranscript(t, "mistral", true, []step{
		{in: "[THINK]cut short", reasoning: "cut short"},
		{in: finish},
	})
}

// TestSplitsAgreeWithParse feeds every case through Push at random split
// points (fixed seeds, many splits per case) and checks that what a client
// sees in total is what Parse gives.
func TestSplitsAgreeWithParse(t *testing.T) {
	texts := []string{
		"",
		"This is a reasoning section</think>This is the rest",
		"<think>with reasoning</think> and more text.",
		"\n <think>r</think>\n\nc<think>again</think> end </think> <thi",
		"<think>first <think>second</think> normal</thing></think>",
		"abc</thing>def</think>done<think",
		"◁think▷Let me see◁/think▷Hi◁think▷more◁/think",
		"[THINK]Let me think.[/THINK]Answer.[THI",
		"thinking text <|tool_calls_section_begin|><|tool_call_begin|>f<|tool_call_end|>",
		"Here's my thought process: I need Here is my response Here's my response: 42. Here",
		"Here is my thought proc",
		"<|channel|>analysis<|message|>first<|end|><|start|>assistant<|channel|>analysis<|message|>second<|end|><|start|>assistant<|channel|>final<|message|>done<|return|>",
		"<|channel|>analysis<|message|>Need it.<|end|><|start|>assistant to=functions.f<|channel|>commentary <|constrain|>json<|message|>{\"a\":1}<|call|>",
		"Thinking<|end|>stray<|start|>assistant<|channel|>final<|message|>x<|e",
		" to=functions.f<|channel|>commentary json<|message|>{}<|call|>",
		"<|channel|>analysis<|message|>unterminated <|chan",
	}
	for _, name := range Names() {
		p := mustLookup(t, name)
		for _, enabled := range []bool{true, false} {
			for ti, text := range texts {
				wantR, wantC := p.Parse(text, enabled)
				rng := rand.New(rand.NewSource(int64(ti)))
				for trial := range 200 {
					var gotR, gotC strings.Builder
					s := p.NewStream(enabled)
					for _, piece := range randomSplit(rng, text) {
						r, c := s.Push(piece)
						gotR.WriteString(r)
						gotC.WriteString(c)
					}
					r, c := s.Finish()
					gotR.WriteString(r)
					gotC.WriteString(c)
					if gotR.String() != wantR || gotC.String() != wantC {
						t.Fatalf("%s enabled=%v text %q trial %d:\nstream reasoning %q content %q\n Parse reasoning %q content %q",
							name, enabled, text, trial, gotR.String(), gotC.String(), wantR, wantC)
					}
				}
			}
		}
	}
}

// randomSplit cuts text into pieces at random rune boundaries (a
// detokenizer's deltas are whole UTF-8).
func randomSplit(rng *rand.Rand, text string) []string {
	var pieces []string
	for text != "" {
		n := 1 + rng.Intn(6)
		i := 0
		for range n {
			if i >= len(text) {
				break
			}
			_, size := utf8.DecodeRuneInString(text[i:])
			i += size
		}
		pieces = append(pieces, text[:i])
		text = text[i:]
	}
	return pieces
}

func TestFinishEndsTheStream(t *testing.T) {
	s := mustLookup(t, "deepseek_r1").NewStream(true)
	s.Push("a</thi")
	if r, c := s.Finish(); r != "</thi" || c != "" {
		t.Fatalf("Finish: got %q %q", r, c)
	}
	if r, c := s.Push("more"); r != "" || c != "" {
		t.Fatalf("Push after Finish released %q %q", r, c)
	}
	if r, c := s.Finish(); r != "" || c != "" {
		t.Fatalf("second Finish released %q %q", r, c)
	}
}
