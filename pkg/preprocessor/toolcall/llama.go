package toolcall

// Llama 3.1/3.2 JSON tool calls (vLLM's llama3_json):
//
//	<|python_tag|>{"name": "get_weather", "parameters": {"city": "Paris"}}
//	{"name": "a", "parameters": {}}; {"name": "b", "parameters": {}}
//
// After <|python_tag|> (anywhere in the output) come one or more JSON
// objects separated by ';'. Without the tag, JSON counts as calls only at
// the very start of the output, and only calls to declared functions: a
// model answering in JSON is otherwise left alone.
const llamaTag = "<|python_tag|>"

var (
	llamaTagShape  = &jsonShape{open: llamaTag, object: true, semis: true}
	llamaLeadShape = &jsonShape{object: true, semis: true, declared: true}
)

func llamaTagRule() rule { return rule{open: llamaTag, region: llamaTagShape.region} }

func newLlama3JSON(tools toolSet) scanner {
	return newMarked(tools, llamaLeadShape.region, llamaTagRule())
}

// The default parser accepts the common JSON shapes: hermes blocks,
// Nemotron's <TOOLCALL>[...]</TOOLCALL>, llama's <|python_tag|>, and plain
// JSON calls at the start of the output (as llama3_json).
const (
	nemotronOpen  = "<TOOLCALL>"
	nemotronClose = "</TOOLCALL>"
)

var nemotronShape = &jsonShape{open: nemotronOpen, close: nemotronClose, object: true, list: true}

func newDefault(tools toolSet) scanner {
	return newMarked(tools, llamaLeadShape.region,
		hermesRule(),
		rule{open: nemotronOpen, region: nemotronShape.region},
		llamaTagRule(),
	)
}
