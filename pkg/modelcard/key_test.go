package modelcard

import (
	"errors"
	"testing"
)

func TestKey(t *testing.T) {
	if got, want := Key("ns", "comp", "ep", 0xabc), "v1/mdc/ns/comp/ep/abc"; got != want {
		t.Errorf("Key = %q, want %q", got, want)
	}
	if got, want := NamespacePrefix("ns"), "v1/mdc/ns/"; got != want {
		t.Errorf("NamespacePrefix = %q, want %q", got, want)
	}
	if got, want := EndpointPrefix("ns", "c", "e"), "v1/mdc/ns/c/e/"; got != want {
		t.Errorf("EndpointPrefix = %q, want %q", got, want)
	}
}

func TestParseKey(t *testing.T) {
	for _, tc := range []struct {
		key  string
		want KeyParts
		ok   bool
	}{
		{"v1/mdc/ns/c/e/694d98147d54c0a0", KeyParts{"ns", "c", "e", 0x694d98147d54c0a0, ""}, true},
		{"v1/mdc/ns/c/e/1f/my-lora", KeyParts{"ns", "c", "e", 0x1f, "my-lora"}, true},
		{"v1/instances/ns/c/e/1f", KeyParts{}, false},
		{"v1/mdc/ns/c/e", KeyParts{}, false},
		{"v1/mdc/ns/c/e/xyz", KeyParts{}, false},
		{"v1/mdc/ns//e/1", KeyParts{}, false},
	} {
		got, err := ParseKey(tc.key)
		if tc.ok != (err == nil) || got != tc.want {
			t.Errorf("ParseKey(%q) = %+v, %v", tc.key, got, err)
		}
		if err != nil && !errors.Is(err, ErrInvalid) {
			t.Errorf("ParseKey(%q) error %v does not wrap ErrInvalid", tc.key, err)
		}
		if err == nil && got.String() != tc.key {
			t.Errorf("String() = %q, want %q", got.String(), tc.key)
		}
	}
}
