package toolcall_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/dynamo-go/dynamo/pkg/preprocessor/toolcall"
)

// golden is one model output and what a parser must make of it.
type golden struct {
	name    string
	parser  string
	tools   []string // nil: any name
	output  string
	content string
	calls   []toolcall.Call
}

func call(name, args string) toolcall.Call { return toolcall.Call{Name: name, Arguments: args} }

const weatherParis = `{"city":"Paris"}`

// Cases are ours; the facts (formats, tricky inputs) come from the tests
// of vLLM and ai-dynamo/dynamo named in the package doc.
var goldens = []golden{
	// hermes / qwen25
	{name: "no call", parser: "hermes", output: "How can I help you today?", content: "How can I help you today?"},
	{name: "marker-like text", parser: "hermes", output: "Wrap it in <tool> or <tool_calls> tags.", content: "Wrap it in <tool> or <tool_calls> tags."},
	{name: "single", parser: "hermes",
		output: "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>",
		calls:  []toolcall.Call{call("get_weather", weatherParis)}},
	{name: "text around", parser: "hermes",
		output:  "Let me check. <tool_call>{\"name\":\"get_weather\",\"arguments\":{\"city\":\"Paris\"}}\n</tool_call>\nDone.",
		content: "Let me check. \nDone.",
		calls:   []toolcall.Call{call("get_weather", weatherParis)}},
	{name: "parallel", parser: "hermes",
		output:  "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"tz\": \"CET\"}}\n</tool_call>",
		content: "\n",
		calls:   []toolcall.Call{call("get_weather", weatherParis), call("get_time", `{"tz":"CET"}`)}},
	{name: "nested, escaped quotes, marker in a string", parser: "hermes",
		output: `<tool_call>{"name": "run", "arguments": {"cmd": "echo \"</tool_call>\" {x}", "opts": {"env": [1, {"k": "v"}]}}}</tool_call>`,
		calls:  []toolcall.Call{call("run", `{"cmd":"echo \"</tool_call>\" {x}","opts":{"env":[1,{"k":"v"}]}}`)}},
	{name: "unicode", parser: "hermes",
		output:  "Voilà ☀ <tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"São Paulo\", \"note\": \"天气 🌤\"}}</tool_call>",
		content: "Voilà ☀ ",
		calls:   []toolcall.Call{call("get_weather", `{"city":"São Paulo","note":"天气 🌤"}`)}},
	{name: "arguments as a JSON string", parser: "hermes",
		output: `<tool_call>{"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}</tool_call>`,
		calls:  []toolcall.Call{call("get_weather", weatherParis)}},
	{name: "no arguments", parser: "hermes",
		output: `<tool_call>{"name": "get_time"}</tool_call>`,
		calls:  []toolcall.Call{call("get_time", "{}")}},
	{name: "malformed JSON is content", parser: "hermes",
		output:  `Hi <tool_call>{"name": "get_weather", "arguments": {city: Paris}}</tool_call> bye`,
		content: `Hi <tool_call>{"name": "get_weather", "arguments": {city: Paris}}</tool_call> bye`},
	{name: "not a JSON body is content", parser: "hermes",
		output:  "<tool_call>get_weather(Paris)</tool_call> then <tool_call>{\"name\":\"a\"}</tool_call>",
		content: "<tool_call>get_weather(Paris)</tool_call> then ",
		calls:   []toolcall.Call{call("a", "{}")}},
	{name: "no name is content", parser: "hermes",
		output:  `<tool_call>{"arguments": {}}</tool_call>`,
		content: `<tool_call>{"arguments": {}}</tool_call>`},
	{name: "unterminated before the commit is content", parser: "hermes",
		output:  `Sure. <tool_call>{"name": "get_weather", "arguments": {"city"`,
		content: `Sure. <tool_call>{"name": "get_weather", "arguments": {"city"`},
	{name: "cut short after the commit keeps what it had", parser: "hermes",
		output:  `Sure. <tool_call>{"name": "get_weather", "arguments": {"city": "Par`,
		content: `Sure. `,
		calls:   []toolcall.Call{call("get_weather", `{"city":"Par`)}},
	{name: "a call without its close marker stands", parser: "hermes",
		output: `<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}`,
		calls:  []toolcall.Call{call("get_weather", weatherParis)}},
	{name: "a bad first value is content", parser: "hermes",
		output:  `<tool_call>{"name": "get_weather", "arguments": {"city": Paris}}</tool_call>`,
		content: `<tool_call>{"name": "get_weather", "arguments": {"city": Paris}}</tool_call>`},
	{name: "JSON that breaks after the commit ends the call there", parser: "hermes",
		output:  `<tool_call>{"name": "f", "arguments": {"a": 1, b}}</tool_call> ok`,
		content: `b}}</tool_call> ok`,
		calls:   []toolcall.Call{call("f", `{"a":1,`)}},
	{name: "arguments before the name", parser: "hermes",
		output: `<tool_call>{"arguments": {"city": "Paris"}, "name": "get_weather"}</tool_call>`,
		calls:  []toolcall.Call{call("get_weather", weatherParis)}},
	{name: "an id before the arguments is kept", parser: "hermes",
		output: `<tool_call>{"id": "call_7", "name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>`,
		calls:  []toolcall.Call{{ID: "call_7", Name: "get_weather", Arguments: weatherParis}}},
	{name: "text between the call and its close marker is content", parser: "hermes",
		output:  `<tool_call>{"name": "get_time"} oops</tool_call>`,
		content: ` oops</tool_call>`,
		calls:   []toolcall.Call{call("get_time", "{}")}},
	{name: "marker prefix at the end", parser: "hermes", output: "a < b and b <tool_ca", content: "a < b and b <tool_ca"},
	{name: "qwen25 is hermes", parser: "qwen25",
		output: "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>",
		calls:  []toolcall.Call{call("get_weather", weatherParis)}},

	// llama3_json
	{name: "no call", parser: "llama3_json", output: "This is just some text without any tool calls", content: "This is just some text without any tool calls"},
	{name: "python tag", parser: "llama3_json",
		output: `<|python_tag|>{"name": "searchTool", "parameters": {"query": "test query", "limit": 10}}`,
		calls:  []toolcall.Call{call("searchTool", `{"query":"test query","limit":10}`)}},
	{name: "plain JSON at the start", parser: "llama3_json", tools: []string{"searchTool"},
		output: ` {"name": "searchTool", "arguments": {"query": "test"}}`,
		calls:  []toolcall.Call{call("searchTool", `{"query":"test"}`)}},
	{name: "plain JSON naming an undeclared function is content", parser: "llama3_json", tools: []string{"searchTool"},
		output:  `{"name": "Ada", "parameters": {"age": 36}}`,
		content: `{"name": "Ada", "parameters": {"age": 36}}`},
	{name: "plain JSON that is not a call is content", parser: "llama3_json",
		output:  `{"answer": 42}`,
		content: `{"answer": 42}`},
	{name: "plain JSON after prose is content", parser: "llama3_json",
		output:  `Here is the result: {"name": "getOpenIncidentsTool", "parameters": {}}`,
		content: `Here is the result: {"name": "getOpenIncidentsTool", "parameters": {}}`},
	{name: "three calls separated by semicolons", parser: "llama3_json",
		output: `{"name": "searchTool", "parameters": {"query": "test1"}} ; {"name": "getOpenIncidentsTool", "parameters": {}};{"name": "searchTool", "parameters": {"query": "test2"}}`,
		calls: []toolcall.Call{
			call("searchTool", `{"query":"test1"}`), call("getOpenIncidentsTool", "{}"), call("searchTool", `{"query":"test2"}`),
		}},
	{name: "text after the call", parser: "llama3_json",
		output:  `<|python_tag|>{"name": "searchTool", "parameters": {}} Would you like to know more?`,
		content: ` Would you like to know more?`,
		calls:   []toolcall.Call{call("searchTool", "{}")}},
	{name: "text before the tag", parser: "llama3_json",
		output:  `Searching. <|python_tag|>{"name": "searchTool", "parameters": {}}`,
		content: `Searching. `,
		calls:   []toolcall.Call{call("searchTool", "{}")}},
	{name: "deep nesting, brackets and escaped quotes in strings", parser: "llama3_json",
		output: `{"name": "parserTool", "parameters": {"text": "He said \"Hello {world}\" [x]", "l1": {"l2": {"l3": {"l4": {"value": "deep"}}}}}}`,
		calls:  []toolcall.Call{call("parserTool", `{"text":"He said \"Hello {world}\" [x]","l1":{"l2":{"l3":{"l4":{"value":"deep"}}}}}`)}},
	{name: "invalid JSON is content", parser: "llama3_json",
		output:  `{"name": "invalidTool", "parameters": {invalid json}`,
		content: `{"name": "invalidTool", "parameters": {invalid json}`},
	{name: "tag before something else is content", parser: "llama3_json",
		output:  `<|python_tag|>brave_search.call(query="weather")`,
		content: `<|python_tag|>brave_search.call(query="weather")`},

	// mistral
	{name: "no call", parser: "mistral", output: "This is a test", content: "This is a test"},
	{name: "array", parser: "mistral",
		output: `[TOOL_CALLS][{"name": "add", "arguments":{"a": 3.5, "b": 4}}]`,
		calls:  []toolcall.Call{call("add", `{"a":3.5,"b":4}`)}},
	{name: "array with spaces, arguments before name", parser: "mistral",
		output: `[TOOL_CALLS]  [ {"arguments": {"name": "John Doe"} , "name":"get_age" } ]`,
		calls:  []toolcall.Call{call("get_age", `{"name":"John Doe"}`)}},
	{name: "parallel in one array", parser: "mistral",
		output: `[TOOL_CALLS][{"name": "add", "arguments": {"a": 3.5, "b": 4}}, {"name": "get_current_weather", "arguments":{"city": "San Francisco", "state": "CA", "unit": "celsius"}}]`,
		calls:  []toolcall.Call{call("add", `{"a":3.5,"b":4}`), call("get_current_weather", `{"city":"San Francisco","state":"CA","unit":"celsius"}`)}},
	{name: "an id before the arguments is kept, after them not", parser: "mistral",
		output: `[TOOL_CALLS][{"name": "add", "id": "abcDEF123", "arguments": {"a": 1}}, {"name": "add", "arguments": {"a": 2}, "id": "late"}]`,
		calls:  []toolcall.Call{{ID: "abcDEF123", Name: "add", Arguments: `{"a":1}`}, call("add", `{"a":2}`)}},
	{name: "object with closing marker", parser: "mistral",
		output:  `[TOOL_CALLS]{"name":"get_weather","arguments":{"city":"Paris"}}[/TOOL_CALLS] ok`,
		content: ` ok`,
		calls:   []toolcall.Call{call("get_weather", weatherParis)}},
	{name: "name then arguments (v11)", parser: "mistral",
		output: `[TOOL_CALLS]add{"a": 3.5, "b": 4}`,
		calls:  []toolcall.Call{call("add", `{"a":3.5,"b":4}`)}},
	{name: "name [ARGS] arguments, parallel (v13)", parser: "mistral",
		output:  `Checking. [TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}[TOOL_CALLS]add[ARGS]{"a": 1}`,
		content: `Checking. `,
		calls:   []toolcall.Call{call("get_weather", weatherParis), call("add", `{"a":1}`)}},
	{name: "a list that breaks after its calls began", parser: "mistral",
		output:  `[TOOL_CALLS][{"name": "add", "arguments": {"a": 3.5}}, {"name": "w", "arguments":{"city": "SF"]`,
		content: `]`,
		calls:   []toolcall.Call{call("add", `{"a":3.5}`), call("w", `{"city":"SF"`)}},
	{name: "a list whose second call is not one", parser: "mistral",
		output:  `[TOOL_CALLS][{"name": "add", "arguments": {"a": 3.5}}, {"nom": "w"}] ok`,
		content: `, {"nom": "w"}] ok`,
		calls:   []toolcall.Call{call("add", `{"a":3.5}`)}},
	{name: "an empty list is content", parser: "mistral", output: `[TOOL_CALLS][]`, content: `[TOOL_CALLS][]`},
	{name: "cut short after the commit keeps what it had", parser: "mistral",
		output: `[TOOL_CALLS]get_weather[ARGS]{"city": "Par`,
		calls:  []toolcall.Call{call("get_weather", `{"city":"Par`)}},
	{name: "cut short before the commit is content", parser: "mistral",
		output:  `[TOOL_CALLS]get_weather[AR`,
		content: `[TOOL_CALLS]get_weather[AR`},

	// pythonic
	{name: "no call", parser: "pythonic", output: "How can I help you today?", content: "How can I help you today?"},
	{name: "a list that is not calls", parser: "pythonic", output: "[1, 2, 3] are numbers", content: "[1, 2, 3] are numbers"},
	{name: "a markdown link", parser: "pythonic", output: "[docs](https://example.com)", content: "[docs](https://example.com)"},
	{name: "simple", parser: "pythonic",
		output: `[get_weather(city='San Francisco', metric='celsius')]`,
		calls:  []toolcall.Call{call("get_weather", `{"city":"San Francisco","metric":"celsius"}`)}},
	{name: "more types", parser: "pythonic",
		output: `[register_user(name='John Doe', age=37, address={'city': 'San Francisco', 'state': 'CA'}, role=None, passed_test=True, aliases=['John', 'Johnny'], ratio=-.5, pair=(1, 2e3))]`,
		calls:  []toolcall.Call{call("register_user", `{"name":"John Doe","age":37,"address":{"city":"San Francisco","state":"CA"},"role":null,"passed_test":true,"aliases":["John","Johnny"],"ratio":-0.5,"pair":[1,2e3]}`)}},
	{name: "parameterless, empty dict and list, parallel", parser: "pythonic",
		output: `[get_weather(), do_something_cool(additional_data={}), do_something_cool(steps=[])]`,
		calls:  []toolcall.Call{call("get_weather", "{}"), call("do_something_cool", `{"additional_data":{}}`), call("do_something_cool", `{"steps":[]}`)}},
	{name: "escaped strings and unicode", parser: "pythonic",
		output: `[get_weather(city='Martha\'s Vineyard', metric='\"cool units\"', note="naïve ☀ ] )")]`,
		calls:  []toolcall.Call{call("get_weather", `{"city":"Martha's Vineyard","metric":"\"cool units\"","note":"naïve ☀ ] )"}`)}},
	{name: "text after the list", parser: "pythonic",
		output:  "[get_weather(city=\"Paris\")]\nLet me know.",
		content: "\nLet me know.",
		calls:   []toolcall.Call{call("get_weather", weatherParis)}},
	{name: "wrapped, after text (Llama 4)", parser: "pythonic",
		output:  `Here's a call: <|python_start|>[get_weather(location='Tokyo', data=[1, 2, 3])]<|python_end|> ok`,
		content: `Here's a call:  ok`,
		calls:   []toolcall.Call{call("get_weather", `{"location":"Tokyo","data":[1,2,3]}`)}},
	{name: "undeclared function is content", parser: "pythonic", tools: []string{"get_weather"},
		output:  `[get_time(tz="CET")]`,
		content: `[get_time(tz="CET")]`},
	{name: "positional arguments are content", parser: "pythonic",
		output:  `[get_weather("Paris")]`,
		content: `[get_weather("Paris")]`},
	{name: "unterminated is content", parser: "pythonic",
		output:  `[get_weather(city='Par`,
		content: `[get_weather(city='Par`},

	// phi4
	{name: "no call", parser: "phi4", output: "I like functools in Python.", content: "I like functools in Python."},
	{name: "parallel", parser: "phi4",
		output:  `Calling: functools[{"name": "get_weather", "arguments": {"city": "Paris"}}, {"name": "get_time", "arguments": {}}] done`,
		content: `Calling:  done`,
		calls:   []toolcall.Call{call("get_weather", weatherParis), call("get_time", "{}")}},
	{name: "malformed is content", parser: "phi4",
		output:  `functools[{"name": "get_weather", "arguments": "Paris"}]`,
		content: `functools[{"name": "get_weather", "arguments": "Paris"}]`},

	// deepseek_v3 / deepseek_v3_1
	{name: "single", parser: "deepseek_v3",
		output:  "Checking.<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n{\"city\": \"Paris\"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
		content: "Checking.",
		calls:   []toolcall.Call{call("get_weather", weatherParis)}},
	{name: "parallel", parser: "deepseek_v3",
		output: "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n{\"city\": \"Paris\"}\n```<｜tool▁call▁end｜>\n<｜tool▁call▁begin｜>function<｜tool▁sep｜>get_time\n```json\n{}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
		calls:  []toolcall.Call{call("get_weather", weatherParis), call("get_time", "{}")}},
	{name: "malformed JSON is content", parser: "deepseek_v3",
		output:  "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n{\"city\": Paris}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
		content: "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n{\"city\": Paris}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>"},
	{name: "parallel with text after", parser: "deepseek_v3_1",
		output:  "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{\"city\": \"Paris\"}<｜tool▁call▁end｜><｜tool▁call▁begin｜>get_time<｜tool▁sep｜>{\"tz\": \"東京\"}<｜tool▁call▁end｜><｜tool▁calls▁end｜> ok",
		content: " ok",
		calls:   []toolcall.Call{call("get_weather", weatherParis), call("get_time", `{"tz":"東京"}`)}},
	{name: "a call without the block's end marker stands", parser: "deepseek_v3_1",
		output: "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{\"city\": \"Paris\"}<｜tool▁call▁end｜>",
		calls:  []toolcall.Call{call("get_weather", weatherParis)}},
	{name: "unterminated before the commit is content", parser: "deepseek_v3_1",
		output:  "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{\"ci",
		content: "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{\"ci"},
	{name: "a call without arguments", parser: "deepseek_v3",
		output: "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_time<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
		calls:  []toolcall.Call{call("get_time", "{}")}},

	// qwen3_coder / nemotron_nano
	{name: "single", parser: "qwen3_coder",
		output:  "I'll check.\n<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>",
		content: "I'll check.\n",
		calls:   []toolcall.Call{call("get_weather", `{"city":"Paris","days":3}`)}},
	{name: "value conversion", parser: "qwen3_coder",
		output: "<tool_call>\n<function=f>\n<parameter=obj>\n{\"a\": [1, 2]}\n</parameter>\n<parameter=flag>\ntrue\n</parameter>\n<parameter=text>\nline one\nline \"two\"\n</parameter>\n<parameter=none>\nnull\n</parameter>\n</function>\n</tool_call>",
		calls:  []toolcall.Call{call("f", `{"obj":{"a":[1,2]},"flag":true,"text":"line one\nline \"two\"","none":null}`)}},
	{name: "parallel", parser: "nemotron_nano",
		output:  "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>\n<tool_call>\n<function=get_time>\n</function>\n</tool_call>",
		content: "\n",
		calls:   []toolcall.Call{call("get_weather", weatherParis), call("get_time", "{}")}},
	{name: "no function is content", parser: "qwen3_coder",
		output:  "<tool_call>\nget_weather Paris\n</tool_call>",
		content: "<tool_call>\nget_weather Paris\n</tool_call>"},

	// harmony
	{name: "no markers", parser: "harmony", output: "The weather is fine.", content: "The weather is fine."},
	{name: "call", parser: "harmony",
		output: `<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"location": "San Francisco, CA", "unit": "celsius"}<|call|>`,
		calls:  []toolcall.Call{call("get_weather", `{"location":"San Francisco, CA","unit":"celsius"}`)}},
	{name: "recipient before the channel, no constrain", parser: "harmony",
		output: `<|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>{"city":"Paris"}<|call|>`,
		calls:  []toolcall.Call{call("get_weather", weatherParis)}},
	{name: "analysis is dropped, final is content", parser: "harmony",
		output:  `<|channel|>analysis<|message|>User wants weather. Call get_weather.<|end|><|start|>assistant<|channel|>final<|message|>It is sunny in Paris.<|return|>`,
		content: "It is sunny in Paris."},
	{name: "analysis then call", parser: "harmony",
		output: `<|channel|>analysis<|message|>We need to call get_weather.<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"location":"San Francisco, CA","unit":"celsius"}<|call|>`,
		calls:  []toolcall.Call{call("get_weather", `{"location":"San Francisco, CA","unit":"celsius"}`)}},
	{name: "parallel", parser: "harmony",
		output: `<|start|>assistant<|channel|>commentary to=functions.a <|constrain|>json<|message|>{"x":1}<|call|><|start|>assistant<|channel|>commentary to=functions.b <|constrain|>json<|message|>{"y":2}<|call|>`,
		calls:  []toolcall.Call{call("a", `{"x":1}`), call("b", `{"y":2}`)}},
	{name: "text around", parser: "harmony",
		output:  `PREFIX <|start|>assistant<|channel|>commentary to=functions.a <|constrain|>json<|message|>{"x":1}<|call|> SUFFIX`,
		content: "PREFIX  SUFFIX",
		calls:   []toolcall.Call{call("a", `{"x":1}`)}},
	{name: "preamble is content", parser: "harmony",
		output:  `<|channel|>commentary<|message|>Let me look that up.<|end|><|start|>assistant<|channel|>commentary to=functions.search <|constrain|>json<|message|>{"q":"Paris \"weather\" <b>"}<|call|>`,
		content: "Let me look that up.",
		calls:   []toolcall.Call{call("search", `{"q":"Paris \"weather\" <b>"}`)}},
	{name: "call ended by the end of output", parser: "harmony",
		output: `<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"location":"NYC"}`,
		calls:  []toolcall.Call{call("get_weather", `{"location":"NYC"}`)}},
	{name: "a terminator inside the JSON cuts the call", parser: "harmony",
		output: `<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"location":"NYC<|call|>`,
		calls:  []toolcall.Call{call("get_weather", `{"location":"NYC`)}},
	{name: "a body that is not JSON is content", parser: "harmony",
		output:  `<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>Paris, please<|call|> ok`,
		content: `<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>Paris, please<|call|> ok`},
	{name: "a call with an empty body", parser: "harmony",
		output: `<|channel|>commentary to=functions.get_time <|constrain|>json<|message|><|call|>`,
		calls:  []toolcall.Call{call("get_time", "{}")}},
	{name: "unterminated header is content", parser: "harmony",
		output:  `Hi <|channel|>commentary to=functions.get_weather <|constrain|>json`,
		content: `Hi <|channel|>commentary to=functions.get_weather <|constrain|>json`},
	{name: "built-in tool is content", parser: "harmony",
		output:  `<|channel|>commentary to=browser.search <|constrain|>json<|message|>{"query":"x"}<|call|>`,
		content: `<|channel|>commentary to=browser.search <|constrain|>json<|message|>{"query":"x"}<|call|>`},
	{name: "unicode final", parser: "harmony",
		output:  "<|channel|>final<|message|>Il fait beau à Paris ☀<|end|>",
		content: "Il fait beau à Paris ☀"},

	// default
	{name: "hermes", parser: "default",
		output: `<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>`,
		calls:  []toolcall.Call{call("get_weather", weatherParis)}},
	{name: "nemotron array", parser: "default",
		output:  `Ok <TOOLCALL>[{"name": "get_weather", "arguments": {"city": "Paris"}}, {"name": "get_time", "arguments": {}}]</TOOLCALL>`,
		content: "Ok ",
		calls:   []toolcall.Call{call("get_weather", weatherParis), call("get_time", "{}")}},
	{name: "plain JSON", parser: "default",
		output: `{"name": "get_weather", "parameters": {"city": "Paris"}}`,
		calls:  []toolcall.Call{call("get_weather", weatherParis)}},
	{name: "no call", parser: "default", output: "Plain answer.", content: "Plain answer."},

	// guided JSON of tool_choice required and named
	{name: "list", parser: "required",
		output: `[{"name": "get_weather", "parameters": {"city": "Paris"}}, {"name": "get_time"}]` + "\n",
		calls:  []toolcall.Call{call("get_weather", weatherParis), call("get_time", "{}")}},
	{name: "arguments taken for parameters", parser: "required",
		output: ` [{"name": "get_weather", "arguments": {"city": "Paris"}}]`,
		calls:  []toolcall.Call{call("get_weather", weatherParis)}},
	{name: "spaces, nested values, null parameters", parser: "required",
		output: " [ {\"name\": \"a\", \"parameters\": {\"x\": [1, {\"y\": \"ü\"}]}},\n {\"name\": \"b\", \"parameters\": null} ] ",
		calls:  []toolcall.Call{call("a", `{"x":[1,{"y":"ü"}]}`), call("b", "{}")}},
	{name: "not JSON is content", parser: "required", output: "I would rather not.", content: "I would rather not."},
	{name: "a call in Python is content", parser: "required", output: `get_weather(city="Paris")`, content: `get_weather(city="Paris")`},
	{name: "an object, not a list, is content", parser: "required",
		output:  `{"name": "get_weather", "parameters": {}}`,
		content: `{"name": "get_weather", "parameters": {}}`},
	{name: "no name is content", parser: "required", output: `[{"parameters": {}}]`, content: `[{"parameters": {}}]`},
	{name: "parameters not an object is content", parser: "required", output: `[{"name": "f", "parameters": [1]}]`, content: `[{"name": "f", "parameters": [1]}]`},
	{name: "cut short after the commit", parser: "required",
		output: `[{"name": "get_weather", "parameters": {"city": "Par`,
		calls:  []toolcall.Call{call("get_weather", `{"city":"Par`)}},
	{name: "an empty list is content", parser: "required", output: "[]", content: "[]"},
	{name: "text after the list is content", parser: "required",
		output:  `[{"name": "get_time", "parameters": {}}] done`,
		content: ` done`,
		calls:   []toolcall.Call{call("get_time", "{}")}},
	{name: "arguments", parser: "named:get_weather", output: `{"city": "Paris"}`, calls: []toolcall.Call{call("get_weather", weatherParis)}},
	{name: "empty arguments", parser: "named:get_time", output: "{}\n", calls: []toolcall.Call{call("get_time", "{}")}},
	{name: "not an object is content", parser: "named:get_weather", output: `["Paris"]`, content: `["Paris"]`},
}

// lookup returns a registered parser, or the guided JSON parsers by the
// test names "required" and "named:FUNCTION".
func lookup(t testing.TB, name string) *toolcall.Parser {
	t.Helper()
	switch {
	case name == "required":
		return toolcall.Required()
	case strings.HasPrefix(name, "named:"):
		return toolcall.Named(strings.TrimPrefix(name, "named:"))
	}
	p, err := toolcall.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestParseGolden(t *testing.T) {
	for _, g := range goldens {
		t.Run(g.parser+"/"+g.name, func(t *testing.T) {
			p := lookup(t, g.parser)
			content, calls := p.Parse(g.output, g.tools)
			if content != g.content {
				t.Errorf("content = %q, want %q", content, g.content)
			}
			if diff := cmp.Diff(g.calls, calls, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("calls (-want +got):\n%s", diff)
			}
		})
	}
}
