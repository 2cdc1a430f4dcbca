package toolcall

import "strings"

// DeepSeek V3 and V3.1. A block of calls:
//
//	<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>...<｜tool▁call▁end｜>...<｜tool▁calls▁end｜>
//
// where each call is, in V3 (type, then name, then a fenced JSON body):
//
//	function<｜tool▁sep｜>get_weather
//	```json
//	{"city": "Paris"}
//	```
//
// and in V3.1 (name, then the JSON arguments):
//
//	get_weather<｜tool▁sep｜>{"city": "Paris"}
//
// A block with any malformed call is returned whole as content.
const (
	dsCallsBegin = "<｜tool▁calls▁begin｜>"
	dsCallsEnd   = "<｜tool▁calls▁end｜>"
	dsCallBegin  = "<｜tool▁call▁begin｜>"
	dsCallEnd    = "<｜tool▁call▁end｜>"
	dsSep        = "<｜tool▁sep｜>"
)

// deepseekBlock returns the body function for a block whose calls are read
// by call.
func deepseekBlock(call func(name, rest string) (Call, bool)) func(string) ([]Call, bool) {
	return func(body string) ([]Call, bool) {
		var calls []Call
		for {
			i := strings.Index(body, dsCallBegin)
			if i < 0 {
				break
			}
			body = body[i+len(dsCallBegin):]
			j := strings.Index(body, dsCallEnd)
			if j < 0 {
				return nil, false
			}
			piece := body[:j]
			body = body[j+len(dsCallEnd):]
			left, right, ok := strings.Cut(piece, dsSep)
			if !ok {
				return nil, false
			}
			c, ok := call(left, right)
			if !ok {
				return nil, false
			}
			calls = append(calls, c)
		}
		return calls, len(calls) > 0
	}
}

// deepseekV3Call reads "function<sep>NAME\n```json\n{...}\n```".
func deepseekV3Call(_, rest string) (Call, bool) {
	name, args, _ := strings.Cut(rest, "\n")
	name = strings.TrimSpace(name)
	args = strings.TrimSpace(args)
	if strings.HasPrefix(args, "```") {
		args = strings.TrimPrefix(args, "```json")
		args = strings.TrimPrefix(args, "```")
		args = strings.TrimSpace(strings.TrimSuffix(args, "```"))
	}
	text, ok := argumentsText(args)
	return Call{Name: name, Arguments: text}, ok && name != ""
}

// deepseekV31Call reads "NAME<sep>{...}".
func deepseekV31Call(name, args string) (Call, bool) {
	name = strings.TrimSpace(name)
	text, ok := argumentsText(args)
	return Call{Name: name, Arguments: text}, ok && name != ""
}

func newDeepseekV3(tools toolSet) scanner {
	return newMarked(tools, nil, rule{open: dsCallsBegin, region: enclosed(dsCallsBegin, dsCallsEnd, deepseekBlock(deepseekV3Call))})
}

func newDeepseekV31(tools toolSet) scanner {
	return newMarked(tools, nil, rule{open: dsCallsBegin, region: enclosed(dsCallsBegin, dsCallsEnd, deepseekBlock(deepseekV31Call))})
}
