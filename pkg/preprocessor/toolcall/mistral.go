package toolcall

// Mistral, in the forms its tokenizer versions produce:
//
//	[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}}]   (before v11)
//	[TOOL_CALLS]{"name": "get_weather", "arguments": {...}}[/TOOL_CALLS]    (single object)
//	[TOOL_CALLS]get_weather{"city": "Paris"}                                (v11)
//	[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}                          (v13 and later)
//
// Several calls are either one array or one [TOOL_CALLS] per call. An "id"
// in a call object before its arguments is kept.
const (
	mistralOpen  = "[TOOL_CALLS]"
	mistralClose = "[/TOOL_CALLS]"
	mistralArgs  = "[ARGS]"
)

var mistralShape = &jsonShape{open: mistralOpen, close: mistralClose, object: true, list: true, names: true}

func isNameByte(c byte) bool {
	return c == '_' || c == '-' || c == '.' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

func newMistral(tools toolSet) scanner {
	return newMarked(tools, nil, rule{open: mistralOpen, region: mistralShape.region})
}

// Phi-4-mini: the word functools followed by a JSON array of calls:
//
//	functools[{"name": "get_weather", "arguments": {"city": "Paris"}}]
//
// "functools" not followed by an array is ordinary text.
const phi4Open = "functools"

var phi4Shape = &jsonShape{open: phi4Open, list: true}

func newPhi4(tools toolSet) scanner {
	return newMarked(tools, nil, rule{open: phi4Open, region: phi4Shape.region})
}
