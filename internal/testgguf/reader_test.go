package testgguf

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
)

// ggufFile is what readGGUF parsed: an independent reader of the format
// (ggml/src/gguf.cpp's rules), used to check what Write wrote.
type ggufFile struct {
	magic, version uint32
	kv             map[string]any // uint8..float64, bool, string, []any
	keys           []string       // in file order
	tensors        []ggufTensor
	dataOffset     uint64 // start of the data section
	alignment      uint64
	size           int64 // file size
}

type ggufTensor struct {
	name   string
	dims   []uint64
	typ    uint32
	offset uint64 // relative to dataOffset
}

type countingReader struct {
	r *bufio.Reader
	n uint64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += uint64(n)
	return n, err
}

func readGGUF(path string) (*ggufFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	cr := &countingReader{r: bufio.NewReaderSize(f, 1<<20)}
	g := &ggufFile{kv: map[string]any{}, size: st.Size(), alignment: 32}
	var scratch [8]byte
	// rd reads fixed-size little-endian values; the common ones without
	// reflection, as a model holds some 600,000 of them.
	rd := func(v any) error {
		switch p := v.(type) {
		case *uint32:
			_, err := io.ReadFull(cr, scratch[:4])
			*p = binary.LittleEndian.Uint32(scratch[:4])
			return err
		case *uint64:
			_, err := io.ReadFull(cr, scratch[:8])
			*p = binary.LittleEndian.Uint64(scratch[:8])
			return err
		case *int32:
			_, err := io.ReadFull(cr, scratch[:4])
			*p = int32(binary.LittleEndian.Uint32(scratch[:4]))
			return err
		}
		return binary.Read(cr, binary.LittleEndian, v)
	}
	var nTensors, nKV uint64
	for _, v := range []any{&g.magic, &g.version, &nTensors, &nKV} {
		if err := rd(v); err != nil {
			return nil, fmt.Errorf("header: %w", err)
		}
	}
	str := func() (string, error) {
		var n uint64
		if err := rd(&n); err != nil {
			return "", err
		}
		if n > 1<<30 {
			return "", fmt.Errorf("string of %d bytes", n)
		}
		b := make([]byte, n)
		_, err := io.ReadFull(cr, b)
		return string(b), err
	}
	var value func(typ uint32) (any, error)
	value = func(typ uint32) (any, error) {
		var err error
		switch typ {
		case 0:
			var v uint8
			err = rd(&v)
			return v, err
		case 1:
			var v int8
			err = rd(&v)
			return v, err
		case 2:
			var v uint16
			err = rd(&v)
			return v, err
		case 3:
			var v int16
			err = rd(&v)
			return v, err
		case 4:
			var v uint32
			err = rd(&v)
			return v, err
		case 5:
			var v int32
			err = rd(&v)
			return v, err
		case 6:
			var v uint32
			err = rd(&v)
			return math.Float32frombits(v), err
		case 7:
			var v uint8
			if err = rd(&v); err == nil && v > 1 {
				err = fmt.Errorf("bool byte %d", v)
			}
			return v == 1, err
		case 8:
			return str()
		case 9:
			var et uint32
			var n uint64
			if err := rd(&et); err != nil {
				return nil, err
			}
			if err := rd(&n); err != nil {
				return nil, err
			}
			out := make([]any, 0, min(n, 1<<20))
			for range n {
				x, err := value(et)
				if err != nil {
					return nil, err
				}
				out = append(out, x)
			}
			return out, nil
		case 10:
			var v uint64
			err = rd(&v)
			return v, err
		case 11:
			var v int64
			err = rd(&v)
			return v, err
		case 12:
			var v float64
			err = rd(&v)
			return v, err
		}
		return nil, fmt.Errorf("unknown value type %d", typ)
	}
	for range nKV {
		k, err := str()
		if err != nil {
			return nil, fmt.Errorf("kv key: %w", err)
		}
		var typ uint32
		if err := rd(&typ); err != nil {
			return nil, err
		}
		v, err := value(typ)
		if err != nil {
			return nil, fmt.Errorf("kv %s: %w", k, err)
		}
		if _, dup := g.kv[k]; dup {
			return nil, fmt.Errorf("duplicate key %s", k)
		}
		g.kv[k] = v
		g.keys = append(g.keys, k)
	}
	if a, ok := g.kv["general.alignment"].(uint32); ok {
		g.alignment = uint64(a)
	}
	for range nTensors {
		var t ggufTensor
		if t.name, err = str(); err != nil {
			return nil, err
		}
		var nd uint32
		if err := rd(&nd); err != nil {
			return nil, err
		}
		t.dims = make([]uint64, nd)
		if err := rd(t.dims); err != nil {
			return nil, err
		}
		if err := rd(&t.typ); err != nil {
			return nil, err
		}
		if err := rd(&t.offset); err != nil {
			return nil, err
		}
		g.tensors = append(g.tensors, t)
	}
	g.dataOffset = pad(cr.n, g.alignment)
	return g, nil
}

// nbytes is the size of an F32 (type 0) or F16 (type 1) tensor's data.
func (t ggufTensor) nbytes() uint64 {
	n := uint64(4)
	if t.typ == 1 {
		n = 2
	}
	for _, d := range t.dims {
		n *= d
	}
	return n
}

// values reads a tensor's first n values.
func (g *ggufFile) values(path string, t ggufTensor, n int) ([]float32, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := make([]float32, n)
	if t.typ == 1 {
		half := make([]uint16, n)
		sr := io.NewSectionReader(f, int64(g.dataOffset+t.offset), int64(2*n))
		if err := binary.Read(sr, binary.LittleEndian, half); err != nil {
			return nil, err
		}
		for i, h := range half {
			out[i] = fromF16(h)
		}
		return out, nil
	}
	sr := io.NewSectionReader(f, int64(g.dataOffset+t.offset), int64(4*n))
	return out, binary.Read(sr, binary.LittleEndian, out)
}

// fromF16 decodes IEEE half precision.
func fromF16(h uint16) float32 {
	sign := float32(1)
	if h&0x8000 != 0 {
		sign = -1
	}
	exp, mant := int(h>>10)&0x1f, float64(h&0x3ff)
	switch exp {
	case 0:
		return sign * float32(math.Ldexp(mant, -24))
	case 31:
		if mant != 0 {
			return float32(math.NaN())
		}
		return sign * float32(math.Inf(1))
	}
	return sign * float32(math.Ldexp(1+mant/1024, exp-15))
}
