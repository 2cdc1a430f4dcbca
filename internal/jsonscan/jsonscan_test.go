package jsonscan

import (
	"encoding/json"
	"testing"
	"unicode/utf8"
)

// String agrees with encoding/json on valid UTF-8 input, escapes and
// surrogate pairs included, and refuses what encoding/json refuses.
func TestStringMatchesEncodingJSON(t *testing.T) {
	for _, in := range []string{
		`"plain"`, `""`, `"tab\tquote\"slash\/back\\"`, `"\u00e9\u4e2d"`, `"\ud83d\ude00"`,
		`"Ġhello"`, `"lone \ud800 surrogate"`, `"\u0000"`,
		`"unterminated`, `"bad \x escape"`, `"\u12"`,
	} {
		var want string
		wantErr := json.Unmarshal([]byte(in), &want)
		got, err := New([]byte(in)).String()
		if (err != nil) != (wantErr != nil) {
			t.Errorf("String(%s): err %v, encoding/json err %v", in, err, wantErr)
			continue
		}
		if err == nil && got != want {
			t.Errorf("String(%s) = %q, encoding/json %q", in, got, want)
		}
	}
}

// Object, Array, Skip, Number and Uint walk a vocabulary-shaped document.
func TestWalkVocabularyDocument(t *testing.T) {
	doc := `{"vocab": {"a": 0, "b\u00e9": 1, "Ġc": 2}, "merges": [["a", "b"], "b c"], "skip": {"x": [1, {"y": null}], "z": -1.5e3}, "n": 42}`
	r := New([]byte(doc))
	vocab := map[string]uint64{}
	var merges int
	var skipped []byte
	var n float64
	err := r.Object(func(key string) error {
		switch key {
		case "vocab":
			return r.Object(func(tok string) error {
				id, err := r.Uint()
				vocab[tok] = id
				return err
			})
		case "merges":
			return r.Array(func(int) error {
				merges++
				_, err := r.Skip()
				return err
			})
		case "n":
			var err error
			n, err = r.Number()
			return err
		default:
			var err error
			skipped, err = r.Skip()
			return err
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(vocab) != 3 || vocab["bé"] != 1 || vocab["Ġc"] != 2 || merges != 2 || n != 42 {
		t.Fatalf("vocab %v merges %d n %v", vocab, merges, n)
	}
	if !json.Valid(skipped) {
		t.Fatalf("Skip returned %q, not one JSON value", skipped)
	}
}

// FuzzReader: no input makes the reader panic or loop, and on valid UTF-8
// every string it accepts equals encoding/json's reading.
func FuzzReader(f *testing.F) {
	for _, s := range []string{`{"a":[1,"b",{"c":null}]}`, `"\ud83d\ude00"`, `[1,2`, `{"k":"v`, `-1.5e3`, "\"\xff\""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if s, err := New(b).String(); err == nil && utf8.Valid(b) {
			var want string
			if json.Unmarshal(b[:New(b).skipTo(b)], &want) == nil && s != want {
				t.Fatalf("String(%q) = %q, encoding/json %q", b, s, want)
			}
		}
		r := New(b)
		_, _ = r.Skip()
		r = New(b)
		_ = r.Object(func(string) error { _, err := r.Skip(); return err })
		r = New(b)
		_ = r.Array(func(int) error { _, err := r.Skip(); return err })
	})
}

// skipTo returns the length of the first JSON value of b (for comparing a
// string reading with encoding/json on the same bytes).
func (r *Reader) skipTo(b []byte) int {
	if _, err := r.Skip(); err != nil {
		return len(b)
	}
	return r.Pos()
}
