package toolcall

// Hermes (NousResearch Hermes 2/3, Qwen 2.5 and its derivatives):
//
//	<tool_call>
//	{"name": "get_weather", "arguments": {"city": "Paris"}}
//	</tool_call>
//
// One call per <tool_call> block; parallel calls are consecutive blocks.
const (
	hermesOpen  = "<tool_call>"
	hermesClose = "</tool_call>"
)

func hermesRule() rule {
	return rule{open: hermesOpen, region: jsonEnclosed(hermesOpen, hermesClose, oneCall)}
}

// oneCall decodes a single call object.
func oneCall(value string) ([]Call, bool) {
	c, ok := callFromObject(value)
	if !ok {
		return nil, false
	}
	return []Call{c}, true
}

func newHermes(tools toolSet) scanner { return newMarked(tools, nil, hermesRule()) }
