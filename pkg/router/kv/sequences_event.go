package kv

import (
	"errors"
	"fmt"

	"github.com/vmihailenco/msgpack/v5"
	"github.com/vmihailenco/msgpack/v5/msgpcode"

	"github.com/dynamo-go/dynamo/pkg/kvblock"
)

// activeSequencesTopic is the component-scoped event-plane topic replica
// events travel on (the reference system's ACTIVE_SEQUENCES_SUBJECT).
const activeSequencesTopic = "active_sequences_events"

// sequenceOp is the kind of a sequenceEvent.
type sequenceOp string

// The operations replicas share; the values are the reference variant
// names.
const (
	opAddRequest           sequenceOp = "AddRequest"
	opMarkPrefillCompleted sequenceOp = "MarkPrefillCompleted"
	opFree                 sequenceOp = "Free"
)

// sequenceEvent is one change to the active sequences, shared between
// router replicas (--router-replica-sync; the reference system's
// ActiveSequenceEvent). On the event plane it has the reference form
// (shown as JSON; see kvblock.Marshal for the encoding):
//
//	{"request_id": "...", "worker": {"worker_id": 1, "dp_rank": 0},
//	 "data": {"AddRequest": {"token_sequence": [..]|null, "isl": 8,
//	          "overlap": 0, "expected_output_tokens": null}}
//	         | "MarkPrefillCompleted" | "Free",
//	 "router_id": 7, "lora_name": null}
type sequenceEvent struct {
	// RequestID is the request the change is about.
	RequestID string
	// Worker is the (worker, dp rank) the request was routed to.
	Worker Worker
	// Op is the change.
	Op sequenceOp
	// Add is the request's data; set iff Op is opAddRequest.
	Add *sequenceAdd
	// RouterID is the publishing router's id.
	RouterID uint64
	// LoraName is the adapter, "" for none.
	LoraName string
}

// sequenceAdd is the payload of an opAddRequest event.
type sequenceAdd struct {
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

// eventData is r as the payload of its opAddRequest event.
func (r activeRequest) eventData(trackBlocks bool) *sequenceAdd {
	a := &sequenceAdd{ISL: r.ISL, Overlap: r.Overlap}
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
// errDuplicateRequest.
func (s *Sequences) Apply(ev sequenceEvent) error {
	if ev.RouterID == s.cfg.RouterID {
		return nil
	}
	switch ev.Op {
	case opAddRequest:
		if ev.Add == nil {
			return fmt.Errorf("kv: apply %s %q: no data", ev.Op, ev.RequestID)
		}
		r := activeRequest{
			ID: ev.RequestID, Worker: ev.Worker, Hashes: ev.Add.TokenSequence,
			ISL: ev.Add.ISL, Overlap: ev.Add.Overlap, LoraName: ev.LoraName,
		}
		if ev.Add.ExpectedOutputTokens != nil {
			r.ExpectedOutputTokens = int(*ev.Add.ExpectedOutputTokens)
		}
		_, err := s.add(r)
		return err
	case opMarkPrefillCompleted:
		s.markPrefillCompleted(ev.RequestID)
	case opFree:
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

// seqEventWire is a sequenceEvent on the event plane (see
// kvblock.Marshal for the encoding).
type seqEventWire struct {
	RequestID string         `json:"request_id"`
	Worker    seqEventWorker `json:"worker"`
	Data      sequenceData   `json:"data"`
	RouterID  uint64         `json:"router_id"`
	LoraName  *string        `json:"lora_name"`
}

// sequenceData is the externally tagged data of a sequenceEvent.
type sequenceData struct {
	op  sequenceOp
	add *sequenceAdd
}

// EncodeMsgpack writes {"AddRequest": {...}}, "MarkPrefillCompleted" or
// "Free".
func (d sequenceData) EncodeMsgpack(enc *msgpack.Encoder) error {
	switch d.op {
	case opAddRequest:
		if d.add == nil {
			return errors.New("kv: AddRequest event without data")
		}
		return kvblock.EncodeVariant(enc, string(opAddRequest), d.add)
	case opMarkPrefillCompleted, opFree:
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
	switch op := sequenceOp(name); op {
	case opAddRequest:
		if code, err := dec.PeekCode(); err == nil && code == msgpcode.Nil {
			return errors.New("kv: sequence event: AddRequest without data")
		}
		d.op, d.add = op, new(sequenceAdd)
		return payload(d.add)
	case opMarkPrefillCompleted, opFree:
		d.op = op
		return payload(nil)
	}
	return fmt.Errorf("kv: sequence event: unknown data %q", name)
}

// EncodeMsgpack writes the event-plane form (see kvblock.Marshal).
func (ev sequenceEvent) EncodeMsgpack(enc *msgpack.Encoder) error {
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
func (ev *sequenceEvent) DecodeMsgpack(dec *msgpack.Decoder) error {
	var w seqEventWire
	if err := dec.Decode(&w); err != nil {
		return fmt.Errorf("kv: sequence event: %w", err)
	}
	if w.Data.op == "" {
		return errors.New("kv: sequence event without data")
	}
	*ev = sequenceEvent{
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
