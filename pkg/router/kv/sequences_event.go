package kv

import (
	"errors"
	"fmt"

	"github.com/vmihailenco/msgpack/v5"
	"github.com/vmihailenco/msgpack/v5/msgpcode"

	"github.com/dynamo-go/dynamo/pkg/kvblock"
)

// ActiveSequencesTopic is the component-scoped event-plane topic replica
// events travel on (the reference system's ACTIVE_SEQUENCES_SUBJECT).
const ActiveSequencesTopic = "active_sequences_events"

// SequenceOp is the kind of a SequenceEvent.
type SequenceOp string

// The operations replicas share; the values are the reference variant
// names.
const (
	OpAddRequest           SequenceOp = "AddRequest"
	OpMarkPrefillCompleted SequenceOp = "MarkPrefillCompleted"
	OpFree                 SequenceOp = "Free"
)

// SequenceEvent is one change to the active sequences, shared between
// router replicas (--router-replica-sync; the reference system's
// ActiveSequenceEvent). On the event plane it has the reference form
// (shown as JSON; see kvblock.Marshal for the encoding):
//
//	{"request_id": "...", "worker": {"worker_id": 1, "dp_rank": 0},
//	 "data": {"AddRequest": {"token_sequence": [..]|null, "isl": 8,
//	          "overlap": 0, "expected_output_tokens": null}}
//	         | "MarkPrefillCompleted" | "Free",
//	 "router_id": 7, "lora_name": null}
type SequenceEvent struct {
	// RequestID is the request the change is about.
	RequestID string
	// Worker is the (worker, dp rank) the request was routed to.
	Worker Worker
	// Op is the change.
	Op SequenceOp
	// Add is the request's data; set iff Op is OpAddRequest.
	Add *SequenceAdd
	// RouterID is the publishing router's id.
	RouterID uint64
	// LoraName is the adapter, "" for none.
	LoraName string
}

// SequenceAdd is the payload of an OpAddRequest event.
type SequenceAdd struct {
	// TokenSequence are the tracking hashes; nil when the publisher does
	// not track active blocks.
	TokenSequence []uint64 `json:"token_sequence"`
	// ISL is the prompt length in tokens.
	ISL int `json:"isl"`
	// Overlap is the cached prefix in blocks.
	Overlap uint32 `json:"overlap"`
	// ExpectedOutputTokens is the expected output length, nil if unknown.
	ExpectedOutputTokens *uint32 `json:"expected_output_tokens"`
}

// eventData is r as the payload of its OpAddRequest event.
func (r ActiveRequest) eventData(trackBlocks bool) *SequenceAdd {
	a := &SequenceAdd{ISL: r.ISL, Overlap: r.Overlap}
	if trackBlocks && r.Hashes != nil {
		a.TokenSequence = r.Hashes
	}
	if r.ExpectedOutputTokens > 0 {
		a.ExpectedOutputTokens = new(uint32(r.ExpectedOutputTokens))
	}
	return a
}

// Apply applies a peer router's event. Events carrying this router's own
// id are ignored; prefill completion and free of unknown ids are no-ops.
// Nothing is published. An AddRequest for an active id is
// ErrDuplicateRequest.
func (s *Sequences) Apply(ev SequenceEvent) error {
	if ev.RouterID == s.cfg.RouterID {
		return nil
	}
	switch ev.Op {
	case OpAddRequest:
		if ev.Add == nil {
			return fmt.Errorf("kv: apply %s %q: no data", ev.Op, ev.RequestID)
		}
		r := ActiveRequest{
			ID: ev.RequestID, Worker: ev.Worker, Hashes: ev.Add.TokenSequence,
			ISL: ev.Add.ISL, Overlap: ev.Add.Overlap, LoraName: ev.LoraName,
		}
		if ev.Add.ExpectedOutputTokens != nil {
			r.ExpectedOutputTokens = int(*ev.Add.ExpectedOutputTokens)
		}
		_, err := s.add(r)
		return err
	case OpMarkPrefillCompleted:
		s.markPrefillCompleted(ev.RequestID)
	case OpFree:
		s.free(ev.RequestID)
	default:
		return fmt.Errorf("kv: apply: unknown op %q", ev.Op)
	}
	return nil
}

type seqEventWorker struct {
	WorkerID uint64 `json:"worker_id"`
	DPRank   uint32 `json:"dp_rank"`
}

// seqEventWire is a SequenceEvent on the event plane (see
// kvblock.Marshal for the encoding).
type seqEventWire struct {
	RequestID string         `json:"request_id"`
	Worker    seqEventWorker `json:"worker"`
	Data      sequenceData   `json:"data"`
	RouterID  uint64         `json:"router_id"`
	LoraName  *string        `json:"lora_name"`
}

// sequenceData is the externally tagged data of a SequenceEvent.
type sequenceData struct {
	op  SequenceOp
	add *SequenceAdd
}

// EncodeMsgpack writes {"AddRequest": {...}}, "MarkPrefillCompleted" or
// "Free".
func (d sequenceData) EncodeMsgpack(enc *msgpack.Encoder) error {
	switch d.op {
	case OpAddRequest:
		if d.add == nil {
			return errors.New("kv: AddRequest event without data")
		}
		return kvblock.EncodeVariant(enc, string(OpAddRequest), d.add)
	case OpMarkPrefillCompleted, OpFree:
		return enc.EncodeString(string(d.op))
	}
	return fmt.Errorf("kv: unknown sequence op %q", d.op)
}

// DecodeMsgpack reads what EncodeMsgpack writes.
func (d *sequenceData) DecodeMsgpack(dec *msgpack.Decoder) error {
	name, payload, err := kvblock.DecodeVariant(dec)
	if err != nil {
		return err
	}
	switch op := SequenceOp(name); op {
	case OpAddRequest:
		if code, err := dec.PeekCode(); err == nil && code == msgpcode.Nil {
			return errors.New("kv: sequence event: AddRequest without data")
		}
		d.op, d.add = op, new(SequenceAdd)
		return payload(d.add)
	case OpMarkPrefillCompleted, OpFree:
		d.op = op
		return payload(nil)
	}
	return fmt.Errorf("kv: sequence event: unknown data %q", name)
}

// EncodeMsgpack writes the event-plane form (see kvblock.Marshal).
func (ev SequenceEvent) EncodeMsgpack(enc *msgpack.Encoder) error {
	w := seqEventWire{
		RequestID: ev.RequestID,
		Worker:    seqEventWorker{WorkerID: ev.Worker.ID, DPRank: ev.Worker.DPRank},
		Data:      sequenceData{op: ev.Op, add: ev.Add},
		RouterID:  ev.RouterID,
	}
	if ev.LoraName != "" {
		w.LoraName = &ev.LoraName
	}
	return enc.Encode(&w)
}

// DecodeMsgpack reads the event-plane form; a missing lora_name is
// accepted.
func (ev *SequenceEvent) DecodeMsgpack(dec *msgpack.Decoder) error {
	var w seqEventWire
	if err := dec.Decode(&w); err != nil {
		return fmt.Errorf("kv: sequence event: %w", err)
	}
	if w.Data.op == "" {
		return errors.New("kv: sequence event without data")
	}
	*ev = SequenceEvent{
		RequestID: w.RequestID,
		Worker:    Worker{ID: w.Worker.WorkerID, DPRank: w.Worker.DPRank},
		Op:        w.Data.op,
		Add:       w.Data.add,
		RouterID:  w.RouterID,
	}
	if w.LoraName != nil {
		ev.LoraName = *w.LoraName
	}
	return nil
}
