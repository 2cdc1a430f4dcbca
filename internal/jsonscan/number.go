package jsonscan

import (
	"math"
	"strconv"
)

// Number reads a JSON number as float64 the way serde_json does by default,
// which is how the Rust tokenizers library reads tokenizer.json (it does not
// enable serde_json's "float_roundtrip" feature). serde_json gathers up to 19
// or 20 significant digits into a uint64 m and a decimal exponent e, and
// returns float64(m) multiplied or divided by the float64 10^|e|: two
// roundings, so the result can be one unit in the last place away from the
// correctly rounded value that strconv.ParseFloat gives. Digits that no
// longer fit in m are dropped. Unigram scores must be read this way, or sums
// that tie in Rust's Viterbi do not tie here (and the other way round).
func (r *Reader) Number() (float64, error) {
	r.SkipWS()
	neg := r.i < len(r.b) && r.b[r.i] == '-'
	if neg {
		r.i++
	}
	if r.i >= len(r.b) || !isDigit(r.b[r.i]) {
		return 0, r.errf("bad number")
	}
	var m uint64
	exp := 0
	if r.b[r.i] == '0' {
		r.i++
		if r.i < len(r.b) && isDigit(r.b[r.i]) {
			return 0, r.errf("bad number")
		}
	} else {
		full := false // m is full: later integer digits only scale it
		for ; r.i < len(r.b) && isDigit(r.b[r.i]); r.i++ {
			d := uint64(r.b[r.i] - '0')
			if full || mulOverflows(m, d) {
				full = true
				exp++
				continue
			}
			m = m*10 + d
		}
	}
	if r.i < len(r.b) && r.b[r.i] == '.' {
		r.i++
		start, full := r.i, false
		for ; r.i < len(r.b) && isDigit(r.b[r.i]); r.i++ {
			d := uint64(r.b[r.i] - '0')
			if full || mulOverflows(m, d) {
				full = true // serde_json ignores the rest of the fraction
				continue
			}
			m = m*10 + d
			exp--
		}
		if r.i == start {
			return 0, r.errf("bad number")
		}
	}
	if r.i < len(r.b) && (r.b[r.i] == 'e' || r.b[r.i] == 'E') {
		r.i++
		negExp := false
		if r.i < len(r.b) && (r.b[r.i] == '+' || r.b[r.i] == '-') {
			negExp = r.b[r.i] == '-'
			r.i++
		}
		start := r.i
		e, tooBig := 0, false
		for ; r.i < len(r.b) && isDigit(r.b[r.i]); r.i++ {
			if e = e*10 + int(r.b[r.i]-'0'); e > math.MaxInt32 {
				tooBig = true
				e = math.MaxInt32
			}
		}
		switch {
		case r.i == start:
			return 0, r.errf("bad number")
		case tooBig && !negExp && m != 0:
			return 0, r.errf("number out of range")
		case tooBig:
			return signed(0, neg), nil
		case negExp:
			exp = max(exp-e, math.MinInt32)
		default:
			exp = min(exp+e, math.MaxInt32)
		}
	}
	f := float64(m)
	for {
		if exp >= -308 && exp <= 308 {
			if exp >= 0 {
				f *= pow10(exp)
			} else {
				f /= pow10(-exp)
			}
			break
		}
		if f == 0 {
			break
		}
		if exp > 0 {
			return 0, r.errf("number out of range")
		}
		f /= 1e308
		exp += 308
	}
	if math.IsInf(f, 0) {
		return 0, r.errf("number out of range")
	}
	return signed(f, neg), nil
}

// mulOverflows reports whether m*10+d overflows a uint64.
func mulOverflows(m, d uint64) bool {
	const lim = math.MaxUint64 / 10
	return m > lim || m == lim && d > math.MaxUint64%10
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func signed(f float64, neg bool) float64 {
	if neg {
		return -f
	}
	return f
}

// pow10 returns the float64 nearest to 10^n for 0 <= n <= 308, the entries
// of serde_json's POW10 table. math.Pow10 is that for n < 32 (a table of
// constants); above, it multiplies two entries and can be one unit off.
func pow10(n int) float64 {
	if n < 32 {
		return math.Pow10(n)
	}
	f, _ := strconv.ParseFloat("1e"+strconv.Itoa(n), 64)
	return f
}
