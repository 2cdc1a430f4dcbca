package kvevents

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"

	"github.com/vmihailenco/msgpack/v5"
	"github.com/vmihailenco/msgpack/v5/msgpcode"
)

// Event tags, the class names msgspec writes (tag=True).
const (
	tagStored  = "BlockStored"
	tagRemoved = "BlockRemoved"
	tagCleared = "AllBlocksCleared"
)

// mediumGPU is the device tier (vLLM's MEDIUM_GPU); events of other media
// (CPU offload, disk) are skipped.
const mediumGPU = "GPU"

// endSeq is the replay stream's end marker: -1 as 8 big-endian bytes.
const endSeq = ^uint64(0)

// errUnknownTag marks an event whose tag is none of the three kinds.
var errUnknownTag = errors.New("kvevents: unknown event tag")

// wireBatch is a decoded KVEventBatch.
type wireBatch struct {
	dpRank    *int64
	events    []wireEvent
	badEvents []error // events that could not be read (unknown tag, bad fields)
}

// wireEvent is one decoded event.
type wireEvent struct {
	tag       string
	hashes    []uint64
	parent    *uint64
	tokens    []uint32
	blockSize int64
	medium    string // "" when absent or nil
	loraName  string // "" when absent or nil
}

// decodeBatch decodes a KVEventBatch payload. The batch is an array
// [ts, events, data_parallel_rank?] (array_like=True; vLLM and SGLang) or
// a map {"ts", "events", "data_parallel_rank" | "dp_rank"}. An event that
// cannot be read is reported in badEvents and the others are kept; an
// error means the payload as a whole is unreadable.
func decodeBatch(payload []byte) (wireBatch, error) {
	r := bytes.NewReader(payload)
	d := msgpack.NewDecoder(r) // a bytes.Reader is read directly, unbuffered
	var b wireBatch
	c, err := d.PeekCode()
	if err != nil {
		return b, err
	}
	switch {
	case isArray(c):
		n, err := d.DecodeArrayLen()
		if err != nil {
			return b, err
		}
		if n < 2 {
			return b, fmt.Errorf("kvevents: batch has %d fields, want at least 2", n)
		}
		if err := d.Skip(); err != nil { // ts
			return b, err
		}
		if err := decodeEvents(d, &b); err != nil {
			return b, err
		}
		if n >= 3 {
			if b.dpRank, err = decodeOptInt(d); err != nil {
				return b, fmt.Errorf("kvevents: data_parallel_rank: %w", err)
			}
		}
		for range n - 3 {
			if err := d.Skip(); err != nil {
				return b, err
			}
		}
	case isMap(c):
		n, err := d.DecodeMapLen()
		if err != nil {
			return b, err
		}
		seenEvents := false
		for range n {
			key, err := d.DecodeString()
			if err != nil {
				return b, err
			}
			switch key {
			case "events":
				if err := decodeEvents(d, &b); err != nil {
					return b, err
				}
				seenEvents = true
			case "data_parallel_rank", "dp_rank":
				if b.dpRank, err = decodeOptInt(d); err != nil {
					return b, fmt.Errorf("kvevents: %s: %w", key, err)
				}
			default:
				if err := d.Skip(); err != nil {
					return b, err
				}
			}
		}
		if !seenEvents {
			return b, errors.New("kvevents: batch has no events field")
		}
	default:
		return b, fmt.Errorf("kvevents: batch is neither an array nor a map (code %#x)", c)
	}
	if r.Len() > 0 {
		return b, errors.New("kvevents: trailing bytes after the batch")
	}
	return b, nil
}

// decodeEvents reads the events array into b.
func decodeEvents(d *msgpack.Decoder, b *wireBatch) error {
	n, err := d.DecodeArrayLen()
	if err != nil {
		return fmt.Errorf("kvevents: events: %w", err)
	}
	for range max(n, 0) {
		raw, err := d.DecodeRaw()
		if err != nil {
			return fmt.Errorf("kvevents: events: %w", err)
		}
		ev, err := decodeEvent(raw)
		if err != nil {
			b.badEvents = append(b.badEvents, err)
			continue
		}
		b.events = append(b.events, ev)
	}
	return nil
}

// decodeEvent decodes one event: a tagged array [tag, fields...]
// (array_like=True) or a tagged map {"type": tag, ...}. Trailing fields
// may be missing (omit_defaults) and unknown ones are ignored.
func decodeEvent(raw []byte) (wireEvent, error) {
	d := msgpack.NewDecoder(bytes.NewReader(raw))
	c, err := d.PeekCode()
	if err != nil {
		return wireEvent{}, err
	}
	if isMap(c) {
		return decodeEventMap(d)
	}
	n, err := d.DecodeArrayLen()
	if err != nil {
		return wireEvent{}, err
	}
	if n < 1 {
		return wireEvent{}, errors.New("kvevents: event array without a tag")
	}
	var ev wireEvent
	if ev.tag, err = d.DecodeString(); err != nil {
		return ev, fmt.Errorf("kvevents: event tag: %w", err)
	}
	// Positional fields after the tag, per kind; the rest is skipped.
	var fields []func() error
	switch ev.tag {
	case tagStored:
		// block_hashes, parent_block_hash, token_ids, block_size,
		// lora_id, medium, lora_name, extra_keys, group_idx, ...
		fields = []func() error{
			func() (err error) { ev.hashes, err = decodeHashes(d); return },
			func() (err error) { ev.parent, err = decodeOptHash(d); return },
			func() (err error) { ev.tokens, err = decodeTokens(d); return },
			func() (err error) { ev.blockSize, err = d.DecodeInt64(); return },
			d.Skip, // lora_id (deprecated)
			func() (err error) { ev.medium, err = decodeOptString(d); return },
			func() (err error) { ev.loraName, err = decodeOptString(d); return },
		}
		if n < 5 {
			return ev, fmt.Errorf("kvevents: BlockStored has %d fields, want at least 4", n-1)
		}
	case tagRemoved:
		// block_hashes, medium, group_idx
		fields = []func() error{
			func() (err error) { ev.hashes, err = decodeHashes(d); return },
			func() (err error) { ev.medium, err = decodeOptString(d); return },
		}
		if n < 2 {
			return ev, errors.New("kvevents: BlockRemoved without block_hashes")
		}
	case tagCleared:
	default:
		return ev, fmt.Errorf("%w %q", errUnknownTag, ev.tag)
	}
	for i := 1; i < n; i++ {
		if i-1 < len(fields) {
			if err := fields[i-1](); err != nil {
				return ev, fmt.Errorf("kvevents: %s field %d: %w", ev.tag, i, err)
			}
			continue
		}
		if err := d.Skip(); err != nil {
			return ev, err
		}
	}
	return ev, nil
}

// decodeEventMap decodes the map form of an event (msgspec's tag field is
// "type").
func decodeEventMap(d *msgpack.Decoder) (wireEvent, error) {
	n, err := d.DecodeMapLen()
	if err != nil {
		return wireEvent{}, err
	}
	var ev wireEvent
	var have struct{ hashes, tokens, blockSize bool }
	for range n {
		key, err := d.DecodeString()
		if err != nil {
			return ev, err
		}
		switch key {
		case "type":
			ev.tag, err = d.DecodeString()
		case "block_hashes":
			ev.hashes, err = decodeHashes(d)
			have.hashes = true
		case "parent_block_hash":
			ev.parent, err = decodeOptHash(d)
		case "token_ids":
			ev.tokens, err = decodeTokens(d)
			have.tokens = true
		case "block_size":
			ev.blockSize, err = d.DecodeInt64()
			have.blockSize = true
		case "medium":
			ev.medium, err = decodeOptString(d)
		case "lora_name":
			ev.loraName, err = decodeOptString(d)
		default:
			err = d.Skip()
		}
		if err != nil {
			return ev, fmt.Errorf("kvevents: event field %q: %w", key, err)
		}
	}
	switch ev.tag {
	case tagStored:
		if !have.hashes || !have.tokens || !have.blockSize {
			return ev, errors.New("kvevents: BlockStored lacks block_hashes, token_ids or block_size")
		}
	case tagRemoved:
		if !have.hashes {
			return ev, errors.New("kvevents: BlockRemoved lacks block_hashes")
		}
	case tagCleared:
	case "":
		return ev, errors.New("kvevents: event map without a type")
	default:
		return ev, fmt.Errorf("%w %q", errUnknownTag, ev.tag)
	}
	return ev, nil
}

// decodeHashes reads a list of block hashes.
func decodeHashes(d *msgpack.Decoder) ([]uint64, error) {
	n, err := d.DecodeArrayLen()
	if err != nil {
		return nil, err
	}
	if n < 0 {
		return nil, errors.New("block_hashes is nil")
	}
	out := make([]uint64, 0, min(n, 1024))
	for range n {
		h, err := decodeHash(d)
		if err != nil {
			return nil, err
		}
		out = append(out, h)
	}
	return out, nil
}

// decodeOptHash reads a block hash or nil.
func decodeOptHash(d *msgpack.Decoder) (*uint64, error) {
	c, err := d.PeekCode()
	if err != nil {
		return nil, err
	}
	if c == msgpcode.Nil {
		return nil, d.DecodeNil()
	}
	h, err := decodeHash(d)
	if err != nil {
		return nil, err
	}
	return &h, nil
}

// decodeHash reads one ExternalBlockHash: an integer (signed values are
// taken as their two's complement) or bytes (see HashFromBytes).
func decodeHash(d *msgpack.Decoder) (uint64, error) {
	c, err := d.PeekCode()
	if err != nil {
		return 0, err
	}
	switch {
	case msgpcode.IsBin(c):
		b, err := d.DecodeBytes()
		if err != nil {
			return 0, err
		}
		return HashFromBytes(b), nil
	case isInt(c):
		return d.DecodeUint64()
	}
	return 0, fmt.Errorf("block hash is neither an integer nor bytes (code %#x)", c)
}

// HashFromBytes maps a block hash sent as bytes (vLLM with
// VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES=0 sends its sha256 digests raw) to
// the uint64 vLLM itself would have sent as an integer:
// int.from_bytes(digest, "big") & (2^64-1), the last 8 bytes read big
// endian (fewer bytes: their big-endian value). Int and bytes
// publishers of the same blocks thus agree.
func HashFromBytes(b []byte) uint64 {
	if len(b) >= 8 {
		return binary.BigEndian.Uint64(b[len(b)-8:])
	}
	var h uint64
	for _, x := range b {
		h = h<<8 | uint64(x)
	}
	return h
}

// decodeTokens reads token_ids. EAGLE's bigram form (a list of pairs) is
// not supported and reads as an error.
func decodeTokens(d *msgpack.Decoder) ([]uint32, error) {
	n, err := d.DecodeArrayLen()
	if err != nil {
		return nil, err
	}
	if n < 0 {
		return nil, errors.New("token_ids is nil")
	}
	out := make([]uint32, 0, min(n, 1<<16))
	for range n {
		c, err := d.PeekCode()
		if err != nil {
			return nil, err
		}
		if !isInt(c) {
			return nil, fmt.Errorf("token id is not an integer (code %#x)", c)
		}
		t, err := d.DecodeInt64()
		if err != nil {
			return nil, err
		}
		if t < 0 || t > 1<<32-1 {
			return nil, fmt.Errorf("token id %d out of range", t)
		}
		out = append(out, uint32(t))
	}
	return out, nil
}

// decodeOptInt reads an integer or nil.
func decodeOptInt(d *msgpack.Decoder) (*int64, error) {
	c, err := d.PeekCode()
	if err != nil {
		return nil, err
	}
	if c == msgpcode.Nil {
		return nil, d.DecodeNil()
	}
	if !isInt(c) {
		return nil, fmt.Errorf("not an integer (code %#x)", c)
	}
	v, err := d.DecodeInt64()
	if err != nil {
		return nil, err
	}
	return &v, nil
}

// decodeOptString reads a string or nil ("").
func decodeOptString(d *msgpack.Decoder) (string, error) {
	c, err := d.PeekCode()
	if err != nil {
		return "", err
	}
	if c == msgpcode.Nil {
		return "", d.DecodeNil()
	}
	return d.DecodeString()
}

func isInt(c byte) bool {
	return msgpcode.IsFixedNum(c) || (c >= msgpcode.Uint8 && c <= msgpcode.Int64)
}

func isArray(c byte) bool {
	return msgpcode.IsFixedArray(c) || c == msgpcode.Array16 || c == msgpcode.Array32
}

func isMap(c byte) bool {
	return msgpcode.IsFixedMap(c) || c == msgpcode.Map16 || c == msgpcode.Map32
}

// onDevice reports whether an event's medium is the GPU tier (absent
// counts as GPU).
func onDevice(medium string) bool {
	return medium == "" || strings.EqualFold(medium, mediumGPU)
}
