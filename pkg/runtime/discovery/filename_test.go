package discovery

import "testing"

func TestKeyEncoding(t *testing.T) {
	for _, tc := range []struct{ key, name string }{
		{"abcXYZ019", "abcXYZ019"},
		{"v1/mdc/ns", "v1%2Fmdc%2Fns"},
		{"a.b-c_d:e", "a%2Eb%2Dc%5Fd%3Ae"},
		{"%", "%25"},
		{"\x00\xff", "%00%FF"},
		{".tmp_x", "%2Etmp%5Fx"},
	} {
		if got := encodeKey(tc.key); got != tc.name {
			t.Errorf("encodeKey(%q) = %q, want %q", tc.key, got, tc.name)
		}
		if got, err := decodeKey(tc.name); err != nil || got != tc.key {
			t.Errorf("decodeKey(%q) = %q, %v, want %q", tc.name, got, err, tc.key)
		}
	}
	for _, name := range []string{".tmp_abc", "a.b", "%2", "%2f", "%41", "%G0", "a%"} {
		if got, err := decodeKey(name); err == nil {
			t.Errorf("decodeKey(%q) = %q, want an error", name, got)
		}
	}
}

func FuzzKeyEncoding(f *testing.F) {
	for _, s := range []string{"", "v1/instances/a/b/c:1", "%%", "\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, key string) {
		got, err := decodeKey(encodeKey(key))
		if err != nil || got != key {
			t.Fatalf("round trip of %q: %q, %v", key, got, err)
		}
	})
}
