package toolcall

// Hermes (NousResearch Hermes 2/3, Qwen 2.5 and its derivatives):
//
//	<tool_call>
//	{"name": "get_weather", "arguments": {"city": "Paris"}}
//	</tool_call>
//
// One call per <tool_call> block; parallel calls are consecutive blocks.
// The closing marker is part of the block when it follows the call (a
// call cut short without it still stands).
const (
	hermesOpen  = "<tool_call>"
	hermesClose = "</tool_call>"
)

var hermesShape = &jsonShape{open: hermesOpen, close: hermesClose, object: true}

func hermesRule() rule { return rule{open: hermesOpen, region: hermesShape.region} }

func newHermes(tools toolSet) scanner { return newMarked(tools, nil, hermesRule()) }
