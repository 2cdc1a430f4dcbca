package jsonscan

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"testing"
)

// TestNumberAsSerdeJSON: Number gives serde_json's default reading, bit for
// bit, which is not always the correctly rounded one (the first two cases are
// Unigram scores of t5-small and a test model; Rust reads them one unit in
// the last place away from strconv.ParseFloat).
func TestNumberAsSerdeJSON(t *testing.T) {
	for _, tc := range []struct {
		in   string
		bits uint64
	}{
		{"-9.366598129272461", 0xc022bbb2bfffffff},
		{"-2.0122928619384766", 0xc000192d00000001},
		{"0.0", 0},
		{"-0.0", 0x8000000000000000},
		{"42", 0x4045000000000000},
		{"-1.5e3", 0xc097700000000000},
		{"1.5E-3", 0x3f589374bc6a7efa},
		{"12.5e+1", 0x405f400000000000},
		{"18446744073709551616", 0x43f0000000000000},
		{"0.12345678901234567890123", 0x3fbf9add3746f65f},
		{"123456789012345678901234567890e-10", 0x43e56a95319d63e1},
		{"1e-400", 0},
		{"5e-324", 1},
	} {
		got, err := New([]byte(tc.in)).Number()
		if err != nil {
			t.Errorf("Number(%s): %v", tc.in, err)
			continue
		}
		if math.Float64bits(got) != tc.bits {
			t.Errorf("Number(%s) = %v (%#x), want %v (%#x)", tc.in, got, math.Float64bits(got), math.Float64frombits(tc.bits), tc.bits)
		}
	}
	for _, in := range []string{"", "-", "+1", "01", "-01", "1.", ".5", "1e", "1e+", "--1", "1e400", "1e99999999999"} {
		if got, err := New([]byte(in)).Number(); err == nil {
			t.Errorf("Number(%q) = %v, want an error", in, got)
		}
	}
}

// pow10 is correctly rounded over serde_json's whole table.
func TestPow10(t *testing.T) {
	for n := 0; n <= 308; n++ {
		want, _ := strconv.ParseFloat("1e"+strconv.Itoa(n), 64)
		if got := pow10(n); got != want {
			t.Errorf("pow10(%d) = %v, want %v", n, got, want)
		}
	}
}

// FuzzNumber: Number accepts what is a JSON number (up to where it stops)
// and stays within a few units in the last place of strconv.ParseFloat.
func FuzzNumber(f *testing.F) {
	for _, s := range []string{"-9.366598129272461", "0", "-0.0", "1e-400", "1.5E+3", "18446744073709551616.5", "01", "1.e"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r := New([]byte(s))
		got, err := r.Number()
		if err != nil {
			return
		}
		num := s[:r.Pos()]
		if !json.Valid([]byte(num)) {
			t.Fatalf("Number(%q) accepted %q, not JSON", s, num)
		}
		want, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
		if err != nil {
			t.Fatalf("Number(%q) = %v, ParseFloat: %v", s, got, err)
		}
		if d := math.Abs(got - want); d > 4*math.Abs(want)*0x1p-52 && d > 0x1p-1070 {
			t.Fatalf("Number(%q) = %v, ParseFloat %v", s, got, want)
		}
	})
}
