package kvblock

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// ErrBadEvent is wrapped by every decoding error of this package.
var ErrBadEvent = errors.New("kvblock: bad event")

// MarshalJSON writes the externally tagged form.
func (d EventData) MarshalJSON() ([]byte, error) {
	switch {
	case d.Stored != nil:
		return json.Marshal(map[string]*StoreData{KindStored: d.Stored})
	case d.Removed != nil:
		return json.Marshal(map[string]*RemoveData{KindRemoved: d.Removed})
	case d.Cleared:
		return json.Marshal(KindCleared)
	}
	return nil, fmt.Errorf("%w: empty event data", ErrBadEvent)
}

// UnmarshalJSON reads the externally tagged form; "cleared" is also
// accepted as {"cleared": null}.
func (d *EventData) UnmarshalJSON(b []byte) error {
	*d = EventData{}
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		if s != KindCleared {
			return fmt.Errorf("%w: unknown event kind %q", ErrBadEvent, s)
		}
		d.Cleared = true
		return nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return fmt.Errorf("%w: data: %w", ErrBadEvent, err)
	}
	if len(m) != 1 {
		return fmt.Errorf("%w: data must have exactly one variant, has %d", ErrBadEvent, len(m))
	}
	for k, v := range m {
		switch k {
		case KindStored:
			d.Stored = new(StoreData)
			return d.Stored.UnmarshalJSON(v)
		case KindRemoved:
			d.Removed = new(RemoveData)
			return d.Removed.UnmarshalJSON(v)
		case KindCleared:
			d.Cleared = true
			return nil
		default:
			return fmt.Errorf("%w: unknown event kind %q", ErrBadEvent, k)
		}
	}
	return nil
}

// UnmarshalJSON accepts hashes written as signed 64-bit numbers (as Python
// engines do) and reinterprets their bits as u64.
func (s *StoreData) UnmarshalJSON(b []byte) error {
	var raw struct {
		ParentHash    *hash64       `json:"parent_hash"`
		Blocks        []StoredBlock `json:"blocks"`
		StartPosition *uint32       `json:"start_position"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return fmt.Errorf("%w: stored: %w", ErrBadEvent, err)
	}
	*s = StoreData{Blocks: raw.Blocks, StartPosition: raw.StartPosition}
	if raw.ParentHash != nil {
		p := uint64(*raw.ParentHash)
		s.ParentHash = &p
	}
	return nil
}

// UnmarshalJSON accepts signed hashes, like StoreData.UnmarshalJSON.
func (s *StoredBlock) UnmarshalJSON(b []byte) error {
	var raw struct {
		BlockHash   hash64       `json:"block_hash"`
		TokensHash  hash64       `json:"tokens_hash"`
		MMExtraInfo *MMExtraInfo `json:"mm_extra_info"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return fmt.Errorf("%w: block: %w", ErrBadEvent, err)
	}
	*s = StoredBlock{BlockHash: uint64(raw.BlockHash), TokensHash: uint64(raw.TokensHash), MMExtraInfo: raw.MMExtraInfo}
	return nil
}

// UnmarshalJSON accepts signed hashes, like StoreData.UnmarshalJSON.
func (r *RemoveData) UnmarshalJSON(b []byte) error {
	var raw struct {
		BlockHashes []hash64 `json:"block_hashes"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return fmt.Errorf("%w: removed: %w", ErrBadEvent, err)
	}
	r.BlockHashes = make([]uint64, len(raw.BlockHashes))
	for i, h := range raw.BlockHashes {
		r.BlockHashes[i] = uint64(h)
	}
	return nil
}

// hash64 decodes a JSON integer in the u64 or i64 range into its u64 bits.
type hash64 uint64

// UnmarshalJSON parses an unsigned or a signed decimal 64-bit integer.
func (h *hash64) UnmarshalJSON(b []byte) error {
	s := string(b)
	if u, err := strconv.ParseUint(s, 10, 64); err == nil {
		*h = hash64(u)
		return nil
	}
	i, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return fmt.Errorf("hash %s is not a 64-bit integer", s)
	}
	*h = hash64(uint64(i))
	return nil
}
