// Package toolcall finds tool calls in the text a model generates.
//
// Models write tool calls as text in a format of their own. The frontend
// runs one Stream per response choice over the streamed text deltas (the
// "jail"): text that cannot be part of a call is released at once as
// content; text that may be (a start marker, or the start of one at the end
// of what has arrived) is held until it is known to be a call or not to be
// one. Push returns Deltas in output order: content, or pieces of calls in
// OpenAI's streaming shape (a call's first piece has its index and name,
// the pieces' argument fragments add up to its arguments). Parallel calls
// come in order, one after the other; text before, between and after
// calls is content. Parse (and Fold of a Stream's deltas) gives the same
// result as a Stream fed the same text in any pieces.
//
// # When a call streams
//
// For the JSON-bodied formats (hermes, llama3_json, mistral, phi4,
// deepseek_v3, deepseek_v3_1, harmony, default, and the guided JSON of
// tool_choice required and named: Required, Named) a call is committed
// once it is known to be one: its name is known and its arguments have
// started well, with the object's opening brace, its first key, the colon
// and the first byte of a valid value (or the whole of an empty object,
// an arguments string holding an object, null, or no arguments). Until
// then nothing of it is sent, and a call that fails is content, never
// dropped. From then on it is a call: its arguments go out as they
// arrive, byte for byte as the model wrote them less the spaces between
// JSON tokens, as far as they are well-formed JSON. A committed call that
// goes wrong keeps what it sent: where a byte breaks its JSON the call
// ends there and the text from that byte on is content (scanned anew);
// where the output ends first (a length limit, say), or a marker that
// ends the call comes first (harmony's <|call|> inside the JSON), its
// arguments stay cut short, as OpenAI's own API leaves a call cut by
// max_tokens. A call object's "id" is kept when it comes before the
// arguments. pythonic and qwen3_coder calls are passed on whole once
// complete, each in one delta: their Python literals and XML parameters
// become JSON only at the end.
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
//   - A block of several JSON calls (a list, a DeepSeek block) streams call
//     by call: its calls up to one that is not a call stand, and the block
//     ends there, the rest being content. A pythonic list and a
//     qwen3_coder block are all calls or all content.
//   - The close marker after a call (</tool_call>, <｜tool▁calls▁end｜>,
//     [/TOOL_CALLS]) is dropped when it is there and not required: a
//     committed call stands without it. A call not committed when the
//     output ends is content.
package toolcall
