package testgguf

import "math"

// gauss draws approximately standard normal values, fast: the sum of
// four uniform random bytes, centred and scaled to unit variance
// (Irwin-Hall, n = 4: 1021 distinct values, |x| < 3.46), two draws per
// SplitMix64 output. The sequence depends only on the seed.
type gauss struct {
	state  uint64
	tables map[float32][]uint16
}

func newGauss(seed int64) *gauss {
	return &gauss{state: uint64(seed), tables: map[float32][]uint16{}}
}

const (
	irwinHallMax  = 4 * 255
	irwinHallMean = irwinHallMax / 2.0
	// irwinHallStd is sqrt(4 * (256^2 - 1) / 12).
	irwinHallStd = 147.7995
)

// pair draws two sums of four random bytes, each in [0, irwinHallMax].
func (g *gauss) pair() (uint32, uint32) {
	// SplitMix64 (Steele, Lea, Flood 2014).
	g.state += 0x9e3779b97f4a7c15
	z := g.state
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	z ^= z >> 31
	z = z&0x00ff00ff00ff00ff + z>>8&0x00ff00ff00ff00ff // four 16-bit sums of two bytes
	return uint32(z&0xffff + z>>16&0xffff), uint32(z>>32&0xffff + z>>48)
}

// next draws one value (and drops the pair's second).
func (g *gauss) next() float32 {
	s, _ := g.pair()
	return irwinHall(s)
}

func irwinHall(sum uint32) float32 {
	return float32((float64(sum) - irwinHallMean) * (1 / irwinHallStd))
}

// table returns, indexed by sum, f16(irwinHall(sum) * scale): a weight
// matrix is then one lookup in a small table per value.
func (g *gauss) table(scale float32) []uint16 {
	t, ok := g.tables[scale]
	if !ok {
		t = make([]uint16, irwinHallMax+1)
		for s := range t {
			t[s] = f16(irwinHall(uint32(s)) * scale)
		}
		g.tables[scale] = t
	}
	return t
}

// f16 converts to IEEE half precision, rounding to nearest even;
// overflow gives infinity, tiny values subnormals or zero.
func f16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp32 := int(b>>23) & 0xff
	mant := b & 0x7fffff
	if exp32 == 0xff { // inf, NaN
		if mant != 0 {
			return sign | 0x7e00
		}
		return sign | 0x7c00
	}
	exp := exp32 - 127 + 15
	if exp >= 31 {
		return sign | 0x7c00
	}
	if exp <= 0 {
		if exp < -10 {
			return sign
		}
		mant |= 0x800000
		shift := uint(14 - exp)
		h := mant >> shift
		rem, half := mant&(1<<shift-1), uint32(1)<<(shift-1)
		if rem > half || rem == half && h&1 == 1 {
			h++
		}
		return sign | uint16(h)
	}
	h := uint32(exp)<<10 | mant>>13
	if rem := mant & 0x1fff; rem > 0x1000 || rem == 0x1000 && h&1 == 1 {
		h++ // may carry into the exponent: the next power of two, or inf
	}
	return sign | uint16(h)
}
