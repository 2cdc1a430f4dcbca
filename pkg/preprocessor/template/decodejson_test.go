package template

import (
	"encoding/json"
	"testing"
)

// A JSON string decodes to what encoding/json gives for it, with its
// escapes or without (the latter skip the decoder).
func FuzzDecodeJSONString(f *testing.F) {
	for _, in := range []string{`"user"`, `"a\"b"`, `"é✓"`, "\"\xff\"", `"tab	"`, `"\u00e9"`, `""`, `"a" `, `"a`} {
		f.Add([]byte(in))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var want string
		if json.Unmarshal(in, &want) != nil {
			return
		}
		got, err := DecodeJSON(in)
		if err != nil || got != want {
			t.Fatalf("DecodeJSON(%q) = %q (%v), encoding/json %q", in, got, err, want)
		}
	})
}
