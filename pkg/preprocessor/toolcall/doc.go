// Package toolcall finds tool calls in the text a model generates.
//
// Models write tool calls as text in a format of their own. The frontend
// runs one Stream per response choice over the streamed text deltas (the
// "jail"): text that cannot be part of a call is released at once as
// content; text that may be (a start marker, or the start of one at the end
// of what has arrived) is held until the call completes and comes back as a
// structured Call. A call that turns out malformed comes back as content,
// never dropped. Parallel calls come back in order; text before, between
// and after calls is content. Parse gives the same result as a Stream fed
// the same text in any pieces.
//
// Lookup returns a Parser by name. The names and formats follow the
// reference system, ai-dynamo/dynamo lib/parsers (src/tool_calling:
// config.rs at 171599c2, harmony/harmony_parser.rs at 0d0e571f,
// test_cases/fixtures at 9c29c8ec), and vLLM's
// vllm/entrypoints/openai/tool_parsers (mistral_tool_parser.py at 021235c5,
// with its tests tests/tool_use/test_mistral_tool_parser.py at 170a04e4,
// tests/entrypoints/openai/tool_parsers/test_pythonic_tool_parser.py at
// 0bed603d and test_llama3_json_tool_parser.py at 11c4d92a):
//
//	hermes, qwen25              <tool_call>{"name": ..., "arguments": {...}}</tool_call>
//	llama3_json                 [<|python_tag|>]{"name": ..., "parameters": {...}}; {...}
//	mistral                     [TOOL_CALLS][{...}, ...]  or  [TOOL_CALLS]name[ARGS]{...}
//	pythonic                    [get_weather(city="Paris"), f(x=1)]  (or in <|python_start|>...<|python_end|>)
//	phi4                        functools[{"name": ..., "arguments": {...}}]
//	deepseek_v3, deepseek_v3_1  <｜tool▁calls▁begin｜>...<｜tool▁calls▁end｜>
//	qwen3_coder, nemotron_nano  <tool_call><function=NAME><parameter=KEY>VALUE</parameter></function></tool_call>
//	harmony                     <|channel|>commentary to=functions.NAME <|constrain|>json<|message|>{...}<|call|>
//	default                     hermes, <TOOLCALL>[...]</TOOLCALL>, <|python_tag|> and leading plain JSON
//
// Where the formats are read differently here than upstream:
//   - Plain JSON (llama3_json, default) and unwrapped pythonic lists are
//     calls only at the start of the output and only when they name
//     declared functions; vLLM's llama3_json also takes a JSON object in
//     the middle of prose, and drops the prose.
//   - Formats without an end marker (llama3_json, mistral, phi4, pythonic)
//     end a call where its JSON (or Python) value closes; the rest of the
//     output is content.
//   - Calls are returned whole, not as argument deltas, and a block of
//     several calls (an array, a DeepSeek block) is all calls or all
//     content: a malformed member makes the whole block content.
//   - An unterminated call is content at Finish (upstream often recovers
//     it), except for harmony, whose <|call|> is a stop token a backend may
//     hide: a function message ended by the end of the output is a call
//     when its body is a JSON object, as in the reference system.
package toolcall
