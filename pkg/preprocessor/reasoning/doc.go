// Package reasoning splits a reasoning model's output text into its
// reasoning (OpenAI chat delta.reasoning_content) and its answer
// (delta.content). The frontend runs one Stream per response choice over
// the detokenized deltas; the parser is chosen by name, from the worker's
// --dyn-reasoning-parser flag (runtime_config.reasoning_parser).
//
// # Formats
//
// Most parsers are a start/end marker pair with a "force" switch:
//
//   - basic, qwen3, nemotron_deci, glm45: <think>…</think>, not forced. The
//     output is reasoning only when it opens with <think> (after optional
//     whitespace, which is dropped with the marker); otherwise it is all
//     content, markers included.
//   - deepseek_r1, nemotron_nano, nemotron3, step3, minimax_append_think:
//     <think>…</think>, forced. The chat template already put <think> in
//     the prompt, so the output is reasoning from its first byte until
//     </think>; a leading <think> is dropped if the model repeats it, and
//     an output without </think> is all reasoning.
//   - kimi_k25: as deepseek_r1, and <|tool_calls_section_begin|> inside the
//     reasoning also ends it (the marker and what follows are content, for
//     the tool-call parser): Kimi K2.5 may open a tool section without
//     closing </think>.
//   - kimi: ◁think▷…◁/think▷, not forced.
//   - mistral: [THINK]…[/THINK], forced. [THINK] and [/THINK] are special
//     tokens of the Mistral tokenizer, so NeedsSpecialTokens is true.
//   - granite (Granite 3.x): "Here is my thought process:" … "Here is my
//     response:", with the variants "Here's my thought process:" and
//     "Here's my response:", not forced. Matching is case-sensitive.
//
// After a <think> block has closed, a later complete <think>…</think> block
// is split out too (interleaved thinking: GLM-4.5 and Qwen3 think again
// between tool calls); the text between blocks is content. Granite has one
// block only. A closing marker with no open block is left in the content
// as written (Dynamo drops it; vLLM keeps it).
//
// gpt_oss reads OpenAI harmony channels. The text of an analysis message
// (<|channel|>analysis<|message|>TEXT<|end|>) is reasoning; consecutive
// analysis messages are joined with "\n". A final message
// (<|channel|>final<|message|>TEXT, up to <|end|>, <|return|> or the end of
// output) gives content TEXT without markers; <|start|>assistant prefixes
// and other headers are removed. A commentary message (a tool call,
// <|start|>assistant to=functions.NAME<|channel|>commentary <|constrain|>json
// <|message|>{…}<|call|>, the recipient before or after the channel) is
// passed through unchanged as content, from its <|start|> or <|channel|>
// through its <|call|> (or <|end|>, or the end of output), so that the
// harmony tool-call parser after this stage can parse it. An output that
// opens without any marker is analysis text (the prompt already opened the
// analysis channel) until a marker says otherwise. The markers are special
// tokens, so the decoder must keep them (NeedsSpecialTokens). A message
// in the analysis channel addressed to a built-in tool (to=python) is
// reasoning like any analysis message; built-in tools are not served.
//
// # Thinking switched off
//
// NewStream(false) is for a request that switched thinking off
// (chat_template_args.enable_thinking=false, or a thinking field saying
// off). Nothing is forced: the output is content, except that a complete
// explicit block (an opening marker at the start, its closing marker
// later; for gpt_oss an analysis message with its <|end|>) is still split
// out as reasoning. To know it is complete the stream holds such a block
// back until its closing marker; if the output ends first, the block is
// released as content, exactly as written.
//
// # Streaming and whitespace
//
// A Stream releases text as soon as it can no longer be part of a marker:
// only a tail that is a proper prefix of a marker that matters in the
// current state (<thi, </thin, <|chan) is held back, and released with the
// next delta once it is clear, or by Finish. Parse is the same machine fed
// the whole output as one delta, so Push+Finish over any split of the text
// gives what Parse gives.
//
// Whitespace is kept as the model wrote it, as the reference frontend's
// streaming path does (Dynamo's delta generator calls the incremental
// parser only, which trims nothing; vLLM strips nothing either): "\n\n"
// after </think> starts the content. The one exception is whitespace
// before an opening marker at the very start, which is dropped with the
// marker.
//
// # Names
//
// Lookup is case-insensitive. An unknown name is an error wrapping
// ErrUnknown, not a silent fallback to basic as in the reference: the
// worker refuses a misspelt flag at start-up.
//
// # Sources
//
// Facts (markers, force flags, registered names, harmony handling) come
// from the reference system ai-dynamo/dynamo lib/parsers/src/reasoning/
// (mod.rs, base_parser.rs, gpt_oss_parser.rs, granite_parser.rs,
// minimax_append_think_parser.rs) and from vLLM vllm/reasoning/
// (basic_parsers.py, deepseek_r1_reasoning_parser.py,
// qwen3_reasoning_parser.py, granite_reasoning_parser.py,
// mistral_reasoning_parser.py, gptoss_reasoning_parser.py) with their tests
// (tests/reasoning/test_deepseekr1_reasoning_parser.py,
// test_granite_reasoning_parser.py, test_gptoss_reasoning_parser.py); the
// golden tests here restate their cases. The code is our own.
package reasoning
