package kv

import (
	"encoding/json"
	"errors"
	"fmt"
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
// ActiveSequenceEvent). Its JSON form is the reference one:
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

type seqEventWire struct {
	RequestID string          `json:"request_id"`
	Worker    seqEventWorker  `json:"worker"`
	Data      json.RawMessage `json:"data"`
	RouterID  uint64          `json:"router_id"`
	LoraName  *string         `json:"lora_name"`
}

// MarshalJSON writes the reference JSON form.
func (ev SequenceEvent) MarshalJSON() ([]byte, error) {
	var data []byte
	var err error
	switch ev.Op {
	case OpAddRequest:
		if ev.Add == nil {
			return nil, errors.New("kv: AddRequest event without data")
		}
		data, err = json.Marshal(map[string]*SequenceAdd{string(OpAddRequest): ev.Add})
	case OpMarkPrefillCompleted, OpFree:
		data, err = json.Marshal(string(ev.Op))
	default:
		return nil, fmt.Errorf("kv: unknown sequence op %q", ev.Op)
	}
	if err != nil {
		return nil, err
	}
	w := seqEventWire{
		RequestID: ev.RequestID,
		Worker:    seqEventWorker{WorkerID: ev.Worker.ID, DPRank: ev.Worker.DPRank},
		Data:      data,
		RouterID:  ev.RouterID,
	}
	if ev.LoraName != "" {
		w.LoraName = &ev.LoraName
	}
	return json.Marshal(w)
}

// UnmarshalJSON reads the reference JSON form; a missing lora_name is
// accepted.
func (ev *SequenceEvent) UnmarshalJSON(b []byte) error {
	var w seqEventWire
	if err := json.Unmarshal(b, &w); err != nil {
		return fmt.Errorf("kv: sequence event: %w", err)
	}
	out := SequenceEvent{
		RequestID: w.RequestID,
		Worker:    Worker{ID: w.Worker.WorkerID, DPRank: w.Worker.DPRank},
		RouterID:  w.RouterID,
	}
	if w.LoraName != nil {
		out.LoraName = *w.LoraName
	}
	var unit string
	if err := json.Unmarshal(w.Data, &unit); err == nil {
		switch op := SequenceOp(unit); op {
		case OpMarkPrefillCompleted, OpFree:
			out.Op = op
		default:
			return fmt.Errorf("kv: sequence event: unknown data %q", unit)
		}
		*ev = out
		return nil
	}
	var tagged map[string]*SequenceAdd
	if err := json.Unmarshal(w.Data, &tagged); err != nil {
		return fmt.Errorf("kv: sequence event data: %w", err)
	}
	add, ok := tagged[string(OpAddRequest)]
	if len(tagged) != 1 || !ok || add == nil {
		return fmt.Errorf("kv: sequence event: unknown data %s", w.Data)
	}
	out.Op, out.Add = OpAddRequest, add
	*ev = out
	return nil
}
