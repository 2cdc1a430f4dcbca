package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"
)

// DecodeOptions control request decoding.
type DecodeOptions struct {
	// AllowUnknownFields ignores unknown top-level fields instead of
	// rejecting them (DYN_IGNORE_OPENAI_FE_UNSUPPORTED_FIELDS).
	AllowUnknownFields bool
	// DisableNvExt treats an nvext object as an unsupported parameter
	// (DYN_DISABLE_FRONTEND_NVEXT). With AllowUnknownFields it is dropped.
	DisableNvExt bool
}

// DecodeChat decodes and validates a chat completions body; the
// deprecated functions/function_call are mapped to tools/tool_choice.
// Every failure is a *ValidationError.
func DecodeChat(body []byte, opts DecodeOptions) (*ChatCompletionRequest, error) {
	if msgs, rest, ok := splitMessages(body); ok {
		return decodeChat(rest, msgs, opts)
	}
	return decodeChatSlow(body, opts)
}

// decodeChatSlow is DecodeChat with encoding/json decoding every byte: the
// fallback for bodies splitMessages declines, and the reference it is
// tested against.
func decodeChatSlow(body []byte, opts DecodeOptions) (*ChatCompletionRequest, error) {
	return decodeChat(body, nil, opts)
}

// decodeChat decodes and validates body; msgs, when not nil, replaces the
// messages decoded from it (splitMessages left an empty array there).
func decodeChat(body []byte, msgs []Message, opts DecodeOptions) (*ChatCompletionRequest, error) {
	var r ChatCompletionRequest
	if msgs == nil || !decodeChatTopStrict(body, &r) {
		r = ChatCompletionRequest{}
		if err := decodeObject(body, opts, chatInfo(), &r); err != nil {
			return nil, err
		}
	}
	if msgs != nil {
		r.Messages = msgs
	}
	if err := r.mapLegacyFunctions(); err != nil {
		return nil, err
	}
	if err := r.Validate(); err != nil {
		return nil, err
	}
	return &r, nil
}

// DecodeCompletion decodes and validates a completions body. Every failure
// is a *ValidationError.
func DecodeCompletion(body []byte, opts DecodeOptions) (*CompletionRequest, error) {
	var r CompletionRequest
	if err := decodeObject(body, opts, completionInfo(), &r); err != nil {
		return nil, err
	}
	if err := r.Validate(); err != nil {
		return nil, err
	}
	return &r, nil
}

// decodeObject checks body against the top-level fields of info and the
// nvext keys, then decodes it into dst (a pointer to info's struct).
func decodeObject(body []byte, opts DecodeOptions, info *typeInfo, dst any) error {
	if !utf8.Valid(body) {
		return invalid("request body is not valid UTF-8")
	}
	if !json.Valid(body) {
		return syntaxError(json.Unmarshal(body, new(any)))
	}
	if b := bytes.TrimLeft(body, " \t\r\n"); len(b) == 0 || b[0] != '{' {
		return invalid("request body must be a JSON object")
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		return invalid("invalid JSON: %v", err)
	}
	var unknown []string
	for k, v := range top {
		_, known := info.known[k]
		if !known || (k == "nvext" && opts.DisableNvExt && present(v)) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		if !opts.AllowUnknownFields {
			e := &ValidationError{Message: "Unsupported parameter(s): " + quoteList(unknown)}
			if len(unknown) == 1 {
				e.Param = unknown[0]
			}
			return e
		}
		for _, k := range unknown {
			delete(top, k)
		}
		// Rebuilt so that encoding/json's case-insensitive matching
		// cannot map an ignored key onto a known field.
		body = rebuild(top)
	}
	if raw, ok := top["nvext"]; ok {
		if err := checkNvExtKeys(raw); err != nil {
			return err
		}
	}
	if err := json.Unmarshal(body, dst); err != nil {
		return decodeError(err, info)
	}
	clearNulls(reflect.ValueOf(dst).Elem())
	return nil
}

// checkNvExtKeys rejects the first key of an nvext object (in document
// order) that NvExt does not know. Other shapes are left to the decoder.
func checkNvExtKeys(raw json.RawMessage) error {
	info := nvextInfo()
	for _, k := range objectKeys(raw) {
		if _, ok := info.known[k]; !ok {
			return invalidParam("nvext."+k, "nvext: unknown field `%s`, expected one of %s", k, quoteList(info.names))
		}
	}
	return nil
}

// objectKeys returns the keys of a valid JSON object in document order, or
// nil when raw is not an object.
func objectKeys(raw []byte) []string {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	var keys []string
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return keys
		}
		k, _ := t.(string)
		keys = append(keys, k)
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return keys
		}
	}
	return keys
}

// rebuild writes top back as a JSON object, values byte for byte.
func rebuild(top map[string]json.RawMessage) []byte {
	var b bytes.Buffer
	b.WriteByte('{')
	first := true
	for k, v := range top {
		if !first {
			b.WriteByte(',')
		}
		first = false
		key, _ := json.Marshal(k)
		b.Write(key)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes()
}

// syntaxError turns a malformed-JSON error into a ValidationError.
func syntaxError(err error) error {
	if se, ok := errors.AsType[*json.SyntaxError](err); ok {
		return invalid("invalid JSON: %s at byte offset %d", se.Error(), se.Offset)
	}
	return invalid("invalid JSON: %v", err)
}

// decodeError turns an encoding/json decoding error into a ValidationError
// naming the field.
func decodeError(err error, info *typeInfo) error {
	if te, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
		field := info.jsonPath(te.Field)
		got := te.Value
		if got == "bool" {
			got = "boolean"
		}
		if field == "" {
			return invalid("expected %s, got %s", describe(te.Type), got)
		}
		return invalidParam(field, "field `%s`: expected %s, got %s", field, describe(te.Type), got)
	}
	if fe, ok := errors.AsType[*fieldError](err); ok {
		return invalidParam(fe.field, "field `%s`: %s", fe.field, fe.msg)
	}
	if _, ok := errors.AsType[*json.SyntaxError](err); ok {
		return syntaxError(err)
	}
	return invalid("invalid request: %v", err)
}

// describe names the JSON kind a Go type expects.
func describe(t reflect.Type) string {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil {
		return "a value"
	}
	switch t.Kind() {
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "an integer"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a non-negative integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return "a value"
}

// present reports whether a raw field holds a value other than null.
func present(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && !bytes.Equal(raw, []byte("null"))
}

// quoteList writes names as "`a`, `b`".
func quoteList(names []string) string {
	var b strings.Builder
	for i, n := range names {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("`" + n + "`")
	}
	return b.String()
}

// invalid returns a ValidationError whose message is "Validation: " and
// the formatted text.
func invalid(format string, args ...any) *ValidationError {
	return &ValidationError{Message: "Validation: " + fmt.Sprintf(format, args...)}
}

// invalidParam is invalid for an error in the request field param.
func invalidParam(param, format string, args ...any) *ValidationError {
	e := invalid(format, args...)
	e.Param = param
	return e
}

// typeInfo is what decoding needs to know about a request struct's JSON
// fields, derived once by reflection.
type typeInfo struct {
	known    map[string]struct{}
	names    []string        // JSON names in declaration order
	embedded map[string]bool // Go names of embedded structs
}

var (
	chatInfo       = sync.OnceValue(func() *typeInfo { return newTypeInfo(reflect.TypeFor[ChatCompletionRequest]()) })
	completionInfo = sync.OnceValue(func() *typeInfo { return newTypeInfo(reflect.TypeFor[CompletionRequest]()) })
	nvextInfo      = sync.OnceValue(func() *typeInfo { return newTypeInfo(reflect.TypeFor[NvExt]()) })
)

func newTypeInfo(t reflect.Type) *typeInfo {
	ti := &typeInfo{known: map[string]struct{}{}, embedded: map[string]bool{}}
	ti.collect(t)
	return ti
}

func (ti *typeInfo) collect(t reflect.Type) {
	for f := range t.Fields() {
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if tag == "-" {
			continue
		}
		if f.Anonymous && tag == "" && f.Type.Kind() == reflect.Struct {
			ti.embedded[f.Name] = true
			ti.collect(f.Type)
			continue
		}
		if !f.IsExported() {
			continue
		}
		if tag == "" {
			tag = f.Name
		}
		ti.known[tag] = struct{}{}
		ti.names = append(ti.names, tag)
	}
}

// jsonPath drops the embedded struct names encoding/json puts into an
// UnmarshalTypeError's field path.
func (ti *typeInfo) jsonPath(goPath string) string {
	parts := strings.Split(goPath, ".")
	parts = slices.DeleteFunc(parts, func(p string) bool { return ti.embedded[p] || p == "" })
	return strings.Join(parts, ".")
}

var rawMessageType = reflect.TypeFor[json.RawMessage]()

// clearNulls sets every json.RawMessage field of struct v holding a
// literal null to nil, also in the structs it holds or points to, so that
// null means absent.
func clearNulls(v reflect.Value) {
	for i := range v.NumField() {
		f := v.Field(i)
		if !f.CanSet() {
			continue
		}
		switch {
		case f.Type() == rawMessageType:
			if !present(f.Bytes()) {
				f.SetBytes(nil)
			}
		case f.Kind() == reflect.Struct:
			clearNulls(f)
		case f.Kind() == reflect.Pointer && !f.IsNil() && f.Elem().Kind() == reflect.Struct:
			clearNulls(f.Elem())
		}
	}
}
