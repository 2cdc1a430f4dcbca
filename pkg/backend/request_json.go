package backend

import (
	"bytes"
	"encoding/json"
	"slices"
)

// A long prompt is most of a Request on the wire: 60,000 token ids are
// about 400 KB of JSON, which encoding/json writes through reflection one
// number at a time and reads back after validating it all. The prompt's
// ids are written and read directly instead; every other field goes
// through encoding/json as before, and the JSON is the same.

// requestFields is Request without its methods, for encoding/json.
type requestFields Request

// tokenIDsNull is how encoding/json writes requestFields' nil TokenIDs.
var tokenIDsNull = []byte(`"token_ids":null`)

// PromptJSON is a prompt's ids already written as the inside of a JSON
// array, "1,2,3" (the
// preprocessor's conversation cache keeps the encoding of a conversation's
// earlier prompt and writes only the ids it adds): Request.MarshalJSON
// copies it instead of writing every id again. It stands for one slice of
// ids: the very slice it was made for, not a copy or a longer one.
type PromptJSON struct {
	json  []byte
	first *uint32
	n     int
}

// NewPromptJSON returns the encoding list (AppendTokenIDList's output,
// without the brackets) of ids.
func NewPromptJSON(ids []uint32, list []byte) *PromptJSON {
	p := &PromptJSON{json: list, n: len(ids)}
	if len(ids) > 0 {
		p.first = &ids[0]
	}
	return p
}

// of returns the encoding when it is that of ids, else nil.
func (p *PromptJSON) of(ids []uint32) []byte {
	if p == nil || len(ids) != p.n || len(ids) > 0 && &ids[0] != p.first {
		return nil
	}
	return p.json
}

// MarshalJSON writes r as encoding/json would: directly
// (request_append.go), or through encoding/json with the prompt's ids
// written directly.
func (r *Request) MarshalJSON() ([]byte, error) {
	if b, ok := appendRequestJSON(make([]byte, 0, 512+len(r.TokenIDs)*11), r); ok {
		return b, nil
	}
	rest := requestFields(*r)
	rest.TokenIDs = nil
	b, err := json.Marshal(&rest)
	if err != nil {
		return nil, err
	}
	// The first occurrence is the field: a string holding these bytes
	// would have its quotes escaped.
	i := bytes.Index(b, tokenIDsNull)
	if i < 0 || r.TokenIDs == nil {
		return b, nil
	}
	at := i + len(`"token_ids":`)
	if list := r.PromptJSON.of(r.TokenIDs); list != nil {
		out := make([]byte, 0, len(b)+len(list)+2)
		out = append(out, b[:at]...)
		out = append(append(append(out, '['), list...), ']')
		return append(out, b[at+len("null"):]...), nil
	}
	out := make([]byte, 0, len(b)+len(r.TokenIDs)*11+2)
	out = append(out, b[:at]...)
	out = AppendTokenIDs(out, r.TokenIDs)
	return append(out, b[at+len("null"):]...), nil
}

// AppendTokenIDs appends ids as a JSON array.
func AppendTokenIDs(b []byte, ids []uint32) []byte {
	b = append(b, '[')
	return append(AppendTokenIDList(b, ids, false), ']')
}

// AppendTokenIDList appends ids as the inside of a JSON array, with a
// comma first when more is set (ids follow others). The digits are
// written in place (a slice append per id costs more than the digits).
func AppendTokenIDList(b []byte, ids []uint32, more bool) []byte {
	b = slices.Grow(b, len(ids)*11)
	for i, id := range ids {
		if i > 0 || more {
			b = append(b, ',')
		}
		n := decimalLen(id)
		at := len(b)
		b = b[:at+n]
		for j := at + n; id >= 100; {
			q := id / 100
			r := (id - q*100) * 2
			j -= 2
			b[j], b[j+1] = digitPairs[r], digitPairs[r+1]
			id = q
		}
		if id >= 10 {
			b[at], b[at+1] = digitPairs[id*2], digitPairs[id*2+1]
		} else {
			b[at] = byte('0' + id)
		}
	}
	return b
}

// decimalLen is the number of decimal digits of v.
func decimalLen(v uint32) int {
	switch {
	case v < 10:
		return 1
	case v < 100:
		return 2
	case v < 1000:
		return 3
	case v < 10000:
		return 4
	case v < 100000:
		return 5
	case v < 1000000:
		return 6
	case v < 10000000:
		return 7
	case v < 100000000:
		return 8
	case v < 1000000000:
		return 9
	}
	return 10
}

// digitPairs holds "00" to "99".
const digitPairs = "00010203040506070809101112131415161718192021222324252627282930313233343536373839" +
	"40414243444546474849505152535455565758596061626364656667686970717273747576777879" +
	"8081828384858687888990919293949596979899"

// DecodeRequest decodes a Request's JSON into r, which it zeroes first
// (json.Unmarshal's result and errors). A request as the frontend writes
// it is read without reflection (request_strict.go); otherwise the
// prompt's ids, when they are a plain array of numbers under the one key
// "token_ids", are read directly, and the rest of the object by
// encoding/json; any other shape goes to encoding/json whole.
func DecodeRequest(b []byte, r *Request) error {
	*r = Request{}
	if decodeRequestStrict(b, r) {
		return nil
	}
	*r = Request{}
	if start, end, ok := tokenIDsSpan(b); ok {
		if ids, ok := parseTokenIDs(b[start:end]); ok {
			rest := make([]byte, 0, len(b)-(end-start)+4)
			rest = append(rest, b[:start]...)
			rest = append(rest, "null"...)
			rest = append(rest, b[end:]...)
			if err := json.Unmarshal(rest, (*requestFields)(r)); err != nil {
				return err
			}
			r.TokenIDs = ids
			return nil
		}
	}
	return json.Unmarshal(b, (*requestFields)(r))
}

// tokenIDsSpan finds the value of the top-level key "token_ids" in the
// JSON object b: ok only when that key appears once, spelled so, and no
// other top-level key matches it case-insensitively (encoding/json would
// take it). The rest of b is not validated here: encoding/json does.
func tokenIDsSpan(b []byte) (start, end int, ok bool) {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return 0, 0, false
	}
	depth := 0
	start = -1
	for i < len(b) {
		c := b[i]
		switch {
		case c == '"':
			j, closed := endOfString(b, i)
			if !closed {
				return 0, 0, false
			}
			if depth == 1 {
				k := skipSpace(b, j)
				if k < len(b) && b[k] == ':' { // a key
					key := b[i+1 : j-1]
					switch {
					case string(key) == "token_ids":
						if start >= 0 {
							return 0, 0, false
						}
						start = skipSpace(b, k+1)
						end = start
						for end < len(b) && b[end] != ']' && b[end] != '}' {
							end++
						}
						if end >= len(b) || b[start] != '[' || b[end] != ']' {
							return 0, 0, false
						}
						end++
						j = end
					case bytes.EqualFold(key, []byte("token_ids")) || bytes.IndexByte(key, '\\') >= 0:
						return 0, 0, false
					}
				}
			}
			i = j
			continue
		case c == '{' || c == '[':
			depth++
		case c == '}' || c == ']':
			depth--
		}
		i++
	}
	return start, end, start >= 0
}

// endOfString returns the index just past the string that starts at
// b[i] (a quote).
func endOfString(b []byte, i int) (int, bool) {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1, true
		}
	}
	return len(b), false
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// parseTokenIDs reads a JSON array of unsigned 32-bit integers written
// plainly (no sign, fraction, exponent or leading zero); anything else is
// not ok, and encoding/json decides.
func parseTokenIDs(b []byte) ([]uint32, bool) {
	ids := make([]uint32, 0, len(b)/6+1)
	i := skipSpace(b, 1)
	if i < len(b) && b[i] == ']' {
		return ids, skipSpace(b, i+1) == len(b)
	}
	for i < len(b) {
		start := i
		var v uint64
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			v = v*10 + uint64(b[i]-'0')
			if v > 1<<32-1 {
				return nil, false
			}
			i++
		}
		if i == start || b[start] == '0' && i-start > 1 {
			return nil, false
		}
		ids = append(ids, uint32(v))
		i = skipSpace(b, i)
		if i >= len(b) {
			return nil, false
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case ']':
			return ids, skipSpace(b, i+1) == len(b)
		default:
			return nil, false
		}
	}
	return nil, false
}
