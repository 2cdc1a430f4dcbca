package toolcall

import "strings"

// Mistral, in the forms its tokenizer versions produce:
//
//	[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}}]   (before v11)
//	[TOOL_CALLS]{"name": "get_weather", "arguments": {...}}[/TOOL_CALLS]    (single object)
//	[TOOL_CALLS]get_weather{"city": "Paris"}                                (v11)
//	[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}                          (v13 and later)
//
// Several calls are either one array or one [TOOL_CALLS] per call. An "id"
// in a call object is kept.
const (
	mistralOpen  = "[TOOL_CALLS]"
	mistralClose = "[/TOOL_CALLS]"
	mistralArgs  = "[ARGS]"
)

func mistralRegion(buf string, atEnd bool, cx *scanCtx) (int, []Call, bool) {
	bad := func() (int, []Call, bool) { return len(mistralOpen), nil, false }
	i := skipSpace(buf, len(mistralOpen))
	if i == len(buf) {
		if atEnd {
			return bad()
		}
		return 0, nil, false
	}
	var name string
	if c := buf[i]; c != '[' && c != '{' {
		j := i
		for j < len(buf) && isNameByte(buf[j]) {
			j++
		}
		if j == i {
			return bad()
		}
		name = buf[i:j]
		rest := buf[j:]
		switch {
		case strings.HasPrefix(rest, mistralArgs):
			j += len(mistralArgs)
		case !atEnd && strings.HasPrefix(mistralArgs, rest): // the name or [ARGS] may go on
			return 0, nil, false
		}
		i = skipSpace(buf, j)
		if i == len(buf) && !atEnd {
			return 0, nil, false
		}
		if i == len(buf) || buf[i] != '{' {
			return bad()
		}
	}
	n := cx.valueEnd(buf, i, `"`)
	if n == 0 {
		if atEnd {
			return bad()
		}
		return 0, nil, false
	}
	value := buf[i : i+n]
	end := i + n
	// An optional closing marker, possibly after spaces.
	j := skipSpace(buf, end)
	if rest := buf[j:]; !atEnd && len(rest) < len(mistralClose) && strings.HasPrefix(mistralClose, rest) {
		return 0, nil, false
	}
	if strings.HasPrefix(buf[j:], mistralClose) {
		end = j + len(mistralClose)
	}
	switch {
	case name != "":
		args, ok := argumentsText(value)
		return end, []Call{{Name: name, Arguments: args}}, ok
	case value[0] == '[':
		calls, ok := callsFromArray(value)
		return end, calls, ok
	}
	c, ok := callFromObject(value)
	return end, []Call{c}, ok
}

func isNameByte(c byte) bool {
	return c == '_' || c == '-' || c == '.' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

func newMistral(tools toolSet) scanner {
	return newMarked(tools, nil, rule{open: mistralOpen, region: mistralRegion})
}

// Phi-4-mini: the word functools followed by a JSON array of calls:
//
//	functools[{"name": "get_weather", "arguments": {"city": "Paris"}}]
//
// "functools" not followed by an array is ordinary text.
const phi4Open = "functools"

func phi4Region(buf string, atEnd bool, cx *scanCtx) (int, []Call, bool) {
	i := skipSpace(buf, len(phi4Open))
	if i == len(buf) && !atEnd {
		return 0, nil, false
	}
	if i == len(buf) || buf[i] != '[' {
		return len(phi4Open), nil, false
	}
	n := cx.valueEnd(buf, i, `"`)
	if n == 0 {
		if atEnd {
			return len(phi4Open), nil, false
		}
		return 0, nil, false
	}
	calls, ok := callsFromArray(buf[i : i+n])
	return i + n, calls, ok
}

func newPhi4(tools toolSet) scanner {
	return newMarked(tools, nil, rule{open: phi4Open, region: phi4Region})
}
