package testgguf

import (
	"bufio"
	"encoding/binary"
	"io"
	"math"
)

// GGUF container constants (gguf-py/gguf/constants.py, ggml/src/gguf.cpp).
const (
	ggufMagic     = 0x46554747 // "GGUF" read as a little-endian uint32
	ggufVersion   = 3
	ggufAlignment = 32 // general.alignment when the key is absent
)

// GGUF metadata value types (GGUFValueType).
const (
	typeUint32  uint32 = 4
	typeInt32   uint32 = 5
	typeFloat32 uint32 = 6
	typeBool    uint32 = 7
	typeString  uint32 = 8
	typeArray   uint32 = 9
)

// GGML tensor types (GGMLQuantizationType) and general.file_type
// (LlamaFileType.MOSTLY_F16: 2-D weights F16, 1-D tensors F32).
const (
	ggmlTypeF32            uint32 = 0
	ggmlTypeF16            uint32 = 1
	llamaFileTypeMostlyF16 uint32 = 1
)

// kv is one metadata entry. value is uint32, float32, bool, string,
// []string or []int32.
type kv struct {
	key   string
	value any
}

// tensorInfo describes one tensor: dims in ggml order (ne0, the
// contiguous dimension, first). F16 tensors are weight matrices of
// random values; F32 ones are norms, all ones.
type tensorInfo struct {
	name  string
	dims  []uint64
	typ   uint32  // ggmlTypeF32 or ggmlTypeF16
	scale float32 // the F16 values' standard deviation
}

func (t *tensorInfo) elems() uint64 {
	n := uint64(1)
	for _, d := range t.dims {
		n *= d
	}
	return n
}

func (t *tensorInfo) nbytes() uint64 {
	if t.typ == ggmlTypeF16 {
		return 2 * t.elems()
	}
	return 4 * t.elems()
}

// pad rounds n up to a multiple of align (a power of two).
func pad(n, align uint64) uint64 { return (n + align - 1) &^ (align - 1) }

// encoder writes little-endian GGUF primitives to a buffered writer and
// counts the bytes, so that padding can be computed; the first write
// error sticks and is returned by flush.
type encoder struct {
	w   *bufio.Writer
	n   uint64
	err error
	buf [8]byte
}

func newEncoder(w io.Writer) *encoder {
	return &encoder{w: bufio.NewWriterSize(w, 1<<20)}
}

func (e *encoder) bytes(b []byte) {
	if e.err != nil {
		return
	}
	_, e.err = e.w.Write(b)
	e.n += uint64(len(b))
}

func (e *encoder) u32(v uint32) {
	binary.LittleEndian.PutUint32(e.buf[:4], v)
	e.bytes(e.buf[:4])
}

func (e *encoder) u64(v uint64) {
	binary.LittleEndian.PutUint64(e.buf[:8], v)
	e.bytes(e.buf[:8])
}

// str writes a GGUF string: a uint64 byte length, then the UTF-8 bytes
// without a terminator.
func (e *encoder) str(s string) {
	e.u64(uint64(len(s)))
	if e.err != nil {
		return
	}
	_, e.err = e.w.WriteString(s)
	e.n += uint64(len(s))
}

// zeros pads with zero bytes up to the next multiple of align.
func (e *encoder) zeros(align uint64) {
	var z [64]byte
	for left := pad(e.n, align) - e.n; left > 0; {
		k := min(left, uint64(len(z)))
		e.bytes(z[:k])
		left -= k
	}
}

// value writes a metadata value with its type tag.
func (e *encoder) value(v any) {
	switch v := v.(type) {
	case uint32:
		e.u32(typeUint32)
		e.u32(v)
	case float32:
		e.u32(typeFloat32)
		e.u32(math.Float32bits(v))
	case bool:
		e.u32(typeBool)
		b := byte(0)
		if v {
			b = 1
		}
		e.bytes([]byte{b})
	case string:
		e.u32(typeString)
		e.str(v)
	case []string:
		e.u32(typeArray)
		e.u32(typeString)
		e.u64(uint64(len(v)))
		for _, s := range v {
			e.str(s)
		}
	case []int32:
		e.u32(typeArray)
		e.u32(typeInt32)
		e.u64(uint64(len(v)))
		for _, x := range v {
			e.u32(uint32(x))
		}
	default:
		panic("testgguf: unsupported metadata value type")
	}
}

// tensorData writes t's values: for F16, draws from g; for F32, ones.
func (e *encoder) tensorData(t *tensorInfo, g *gauss) {
	var chunk [4096]byte
	var half []uint16
	size := uint64(2)
	if t.typ == ggmlTypeF16 {
		half = g.table(t.scale)
	} else {
		size = 4
		for j := 0; j < len(chunk); j += 4 {
			binary.LittleEndian.PutUint32(chunk[j:], math.Float32bits(1))
		}
	}
	for left := t.elems(); left > 0 && e.err == nil; {
		k := min(left, uint64(len(chunk))/size)
		if half != nil {
			for j := uint64(0); j < k; j += 2 {
				a, b := g.pair()
				binary.LittleEndian.PutUint16(chunk[2*j:], half[a])
				if j+1 < k {
					binary.LittleEndian.PutUint16(chunk[2*j+2:], half[b])
				}
			}
		}
		e.bytes(chunk[:size*k])
		left -= k
	}
}

func (e *encoder) flush() error {
	if e.err != nil {
		return e.err
	}
	return e.w.Flush()
}

// writeGGUF writes a complete GGUF v3 file: header, metadata, tensor
// infos, padding to the alignment, then each tensor's data padded to the
// alignment (offsets relative to the data section, as gguf.cpp checks).
func writeGGUF(w io.Writer, kvs []kv, tensors []tensorInfo, g *gauss) error {
	e := newEncoder(w)
	e.u32(ggufMagic)
	e.u32(ggufVersion)
	e.u64(uint64(len(tensors)))
	e.u64(uint64(len(kvs)))
	for _, p := range kvs {
		e.str(p.key)
		e.value(p.value)
	}
	var off uint64
	for _, t := range tensors {
		e.str(t.name)
		e.u32(uint32(len(t.dims)))
		for _, d := range t.dims {
			e.u64(d)
		}
		e.u32(t.typ)
		e.u64(off)
		off += pad(t.nbytes(), ggufAlignment)
	}
	e.zeros(ggufAlignment)
	for i := range tensors {
		e.tensorData(&tensors[i], g)
		e.zeros(ggufAlignment)
	}
	return e.flush()
}
