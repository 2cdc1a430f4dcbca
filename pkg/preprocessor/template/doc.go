// Package template renders Hugging Face chat templates (Jinja) byte-for-byte
// as transformers does: Jinja2 in an ImmutableSandboxedEnvironment with
// trim_blocks, lstrip_blocks, keep_trailing_newline=False, loop controls,
// the {% generation %} block, raise_exception, strftime_now, and tojson as
// transformers overrides it (insertion order, ", "/": " separators, indent,
// ensure_ascii=False, no HTML escaping).
//
// # Engine decision
//
// This is an own interpreter, not gonja. The measurement in
// shared/spec/tokenizers.md §2.1 (gonja v2.9.1: 37–38 of 53 real-template
// cases) shows gaps that are structural for chat templates: tojson is Go
// json.Marshal (sorted keys, HTML escaping, compact separators, no
// separators= kwarg), Go maps lose key order and gonja's ordered *exec.Dict
// breaks .items() in some templates, {% generation %} does not parse, and
// Undefined arithmetic does not raise. Patching these means replacing
// gonja's value model, which is most of an interpreter. The subset that real
// chat templates use is small enough to implement directly (about 3k lines).
//
// # Values
//
// Values follow Python: nil (None), bool, int64, float64 (int and float are
// distinct, and floats render as Python repr), string, []any (list and
// tuple), *OrderedMap (dict, insertion ordered), plus internal undefined,
// namespace, macro and generator values. Contexts are *OrderedMap; use
// DecodeJSON or (*OrderedMap).UnmarshalJSON to build them from JSON without
// losing key order or the int/float distinction. Printing follows Python
// str(): True/False/None, and lists and dicts as repr with single quotes.
//
// # Dialects
//
// Options.Dialect picks whose behaviour to reproduce where Python jinja2
// and the JavaScript @huggingface/jinja disagree. DialectPython (the zero
// value) is what transformers' apply_chat_template produces. DialectHFJS
// is @huggingface/jinja 0.5.x: true/false, null written as nothing, lists
// and dicts printed JSON-like, str + any concatenating, filters returning
// lists, and a null literal. Both share one parser and evaluator; the
// differences are the methods of Dialect in dialect.go.
//
// # Lifecycle and concurrency
//
// Compile once per model and cache the *Template. It is immutable and safe
// for concurrent Render calls.
//
// # Errors
//
// Compile returns parse errors. Render returns errors wrapping ErrRaised
// (raise_exception), ErrUndefined (operations on undefined values where
// Jinja2 raises UndefinedError), or a plain error for Python-style
// TypeErrors (for example 'str' + 'int').
//
// # Conformance
//
// The gate tests read ../../../../shared/testdata/chat_templates and skip
// when it is absent. hfjinja_unit_cases.json (and one e2e case, Hammer2.1)
// encode @huggingface/jinja output, so the unit cases run under
// DialectHFJS; the e2e cases and expected.jsonl run under both dialects.
// testdata/pyjinja_oracle.py renders the same cases, plus
// testdata/pyjinja_cases.json, with Python jinja2 configured like
// transformers; TestPythonParity and TestPythonParityLocal check
// DialectPython against that output. See docs/chat-templates.md.
package template
