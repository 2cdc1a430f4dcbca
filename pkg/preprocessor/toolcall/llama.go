package toolcall

// Llama 3.1/3.2 JSON tool calls (vLLM's llama3_json):
//
//	<|python_tag|>{"name": "get_weather", "parameters": {"city": "Paris"}}
//	{"name": "a", "parameters": {}}; {"name": "b", "parameters": {}}
//
// After <|python_tag|> (anywhere in the output) come one or more JSON
// objects separated by ';'. Without the tag, JSON counts as calls only at
// the very start of the output, and only when every object is a call to a
// declared function: a model answering in JSON is otherwise left alone.
const llamaTag = "<|python_tag|>"

func llamaTagRule() rule {
	return rule{open: llamaTag, region: func(buf string, atEnd bool, cx *scanCtx) (int, []Call, bool) {
		end, objs, st := jsonObjects(cx, buf, len(llamaTag), atEnd)
		switch st {
		case scanMore:
			return 0, nil, false
		case scanBad:
			return len(llamaTag), nil, false
		}
		calls, ok := callsFromObjects(objs)
		return end, calls, ok
	}}
}

// llamaLead takes plain JSON calls at the start of the output.
func llamaLead(buf string, atEnd bool, cx *scanCtx) (int, []Call, bool, leadVerdict) {
	i := skipSpace(buf, 0)
	if i == len(buf) {
		if atEnd {
			return 0, nil, false, leadNone
		}
		return 0, nil, false, leadMore
	}
	if buf[i] != '{' {
		return 0, nil, false, leadNone
	}
	end, objs, st := jsonObjects(cx, buf, i, atEnd)
	switch st {
	case scanMore:
		return 0, nil, false, leadMore
	case scanBad:
		return 0, nil, false, leadNone
	}
	calls, ok := callsFromObjects(objs)
	if !ok || !cx.tools.allows(calls) {
		return end, nil, false, leadFound
	}
	return end, calls, true, leadFound
}

func callsFromObjects(objs []string) ([]Call, bool) {
	calls := make([]Call, 0, len(objs))
	for _, o := range objs {
		c, ok := callFromObject(o)
		if !ok {
			return nil, false
		}
		calls = append(calls, c)
	}
	return calls, true
}

func newLlama3JSON(tools toolSet) scanner { return newMarked(tools, llamaLead, llamaTagRule()) }

// The default parser accepts the common JSON shapes: hermes blocks,
// Nemotron's <TOOLCALL>[...]</TOOLCALL>, llama's <|python_tag|>, and plain
// JSON calls at the start of the output (as llama3_json).
const (
	nemotronOpen  = "<TOOLCALL>"
	nemotronClose = "</TOOLCALL>"
)

// oneOrMoreCalls decodes a call object or an array of them.
func oneOrMoreCalls(value string) ([]Call, bool) {
	if value[0] == '[' {
		return callsFromArray(value)
	}
	return oneCall(value)
}

func newDefault(tools toolSet) scanner {
	return newMarked(tools, llamaLead,
		hermesRule(),
		rule{open: nemotronOpen, region: jsonEnclosed(nemotronOpen, nemotronClose, oneOrMoreCalls)},
		llamaTagRule(),
	)
}
