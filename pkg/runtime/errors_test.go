package runtime

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
)

func TestErrorSurvivesJSONAndMatchesClass(t *testing.T) {
	orig := fmt.Errorf("engine: %w", &Error{Type: TypeEngineShutdown, Message: "draining", Cause: &Error{Type: TypeCancelled, Message: "stop"}})
	b, err := json.Marshal(asError(orig))
	if err != nil {
		t.Fatal(err)
	}
	var got *Error
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(got, ErrEngineShutdown) {
		t.Fatalf("decoded %v (%s) does not match ErrEngineShutdown", got, b)
	}
	if !errors.Is(got, ErrCancelled) {
		t.Fatal("cause chain lost: want Cancelled in the chain")
	}
	if errors.Is(got, ErrDisconnected) {
		t.Fatal("EngineShutdown must not match Disconnected")
	}
	if !IsInstanceFault(got) {
		t.Fatal("EngineShutdown is an instance fault")
	}
}

func TestErrorDisplayAndLegacyType(t *testing.T) {
	e := NewError(TypeDisconnected, MsgStreamEnded)
	if e.Error() != "Disconnected: Stream ended before generation completed" {
		t.Fatalf("Error() = %q", e.Error())
	}
	var legacy Error
	if err := json.Unmarshal([]byte(`{"error_type":{"Backend":"EngineShutdown"},"message":"x"}`), &legacy); err != nil {
		t.Fatal(err)
	}
	if legacy.Type != TypeEngineShutdown {
		t.Fatalf("legacy type = %q", legacy.Type)
	}
	if typeOf(errors.New("plain")) != TypeUnknown || asError(errors.New("plain")).Type != TypeUnknown {
		t.Fatal("a plain error must classify as Unknown")
	}
}

func TestPlainItemFastPathOnlyTakesItsOwnShape(t *testing.T) {
	for _, tc := range []struct {
		frame, item string
		ok          bool
	}{
		{`{"data":{"data":{"token_ids":[1]}},"complete_final":false}`, `{"token_ids":[1]}`, true},
		{`{"data":{"data":7},"complete_final":false}`, `7`, true},
		// A frame that only looks like ours must take the full decode.
		{`{"data":{"data":1,"event":"error","error":{"error_type":"Unknown","message":"x"}},"complete_final":false}`, "", false},
		{`{"complete_final":true}`, "", false},
		{`{"data":{"data":},"complete_final":false}`, "", false},
	} {
		item, ok := plainItem([]byte(tc.frame))
		if ok != tc.ok || (ok && string(item) != tc.item) {
			t.Errorf("plainItem(%s) = %s, %v; want %s, %v", tc.frame, item, ok, tc.item, tc.ok)
		}
		if tc.ok {
			if got := string(appendDataFrame(nil, []byte(tc.item))); got != tc.frame {
				t.Errorf("appendDataFrame(%s) = %s, want %s", tc.item, got, tc.frame)
			}
		}
	}
}
