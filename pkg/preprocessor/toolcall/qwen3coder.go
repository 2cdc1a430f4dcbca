package toolcall

import (
	"encoding/json"
	"strings"
)

// Qwen3-Coder (and NVIDIA Nemotron Nano, which uses the same template):
//
//	<tool_call>
//	<function=get_weather>
//	<parameter=city>
//	Paris
//	</parameter>
//	</function>
//	</tool_call>
//
// A parameter's value loses one leading and one trailing newline; it is
// taken as JSON when it parses as JSON (numbers, true, objects, ...), else
// as a string. The request's parameter schema is not consulted. The
// calls of a block are passed on whole once the block is complete: a
// value's JSON form is known only at its end.
const (
	qcFunction      = "<function="
	qcFunctionClose = "</function>"
	qcParam         = "<parameter="
	qcParamClose    = "</parameter>"
)

func qwen3CoderBody(body string) ([]Call, bool) {
	var calls []Call
	for {
		i := strings.Index(body, qcFunction)
		if i < 0 {
			break
		}
		body = body[i+len(qcFunction):]
		gt := strings.IndexByte(body, '>')
		if gt < 0 {
			return nil, false
		}
		name := strings.TrimSpace(body[:gt])
		body = body[gt+1:]
		end := strings.Index(body, qcFunctionClose)
		if end < 0 || name == "" {
			return nil, false
		}
		args, ok := qwen3CoderParams(body[:end])
		if !ok {
			return nil, false
		}
		calls = append(calls, Call{Name: name, Arguments: args})
		body = body[end+len(qcFunctionClose):]
	}
	return calls, len(calls) > 0
}

// qwen3CoderParams turns the <parameter=...> elements of a function into a
// JSON object text, keeping their order.
func qwen3CoderParams(fn string) (string, bool) {
	var b strings.Builder
	b.WriteByte('{')
	first := true
	for {
		i := strings.Index(fn, qcParam)
		if i < 0 {
			break
		}
		fn = fn[i+len(qcParam):]
		gt := strings.IndexByte(fn, '>')
		if gt < 0 {
			return "", false
		}
		key := strings.TrimSpace(fn[:gt])
		fn = fn[gt+1:]
		end, skip := len(fn), 0
		if j := strings.Index(fn, qcParamClose); j >= 0 {
			end, skip = j, len(qcParamClose)
		} else if j := strings.Index(fn, qcParam); j >= 0 { // tolerate a missing </parameter>
			end = j
		}
		value := fn[:end]
		fn = fn[end+skip:]
		if key == "" {
			return "", false
		}
		if !first {
			b.WriteByte(',')
		}
		first = false
		b.WriteString(jsonString(key))
		b.WriteByte(':')
		b.WriteString(paramValue(value))
	}
	b.WriteByte('}')
	return b.String(), true
}

// paramValue converts a parameter's text to JSON: the text itself when it
// is JSON, else a JSON string.
func paramValue(v string) string {
	v = strings.TrimPrefix(v, "\n")
	v = strings.TrimSuffix(v, "\n")
	if t := strings.TrimSpace(v); t != "" && json.Valid([]byte(t)) {
		if c, ok := compactJSON(t); ok {
			return c
		}
	}
	return jsonString(v)
}

func newQwen3Coder(tools toolSet) scanner {
	return newMarked(tools, nil, rule{open: hermesOpen, region: whole(enclosed(hermesOpen, hermesClose, qwen3CoderBody))})
}
