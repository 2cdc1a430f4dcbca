package openai

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestSessionControl(t *testing.T) {
	for _, tc := range []struct {
		raw, wantErr string
		want         SessionControl
	}{
		{raw: `{"session_id":"a"}`, want: SessionControl{SessionID: "a"}},
		{raw: `{"session_id":"a","action":"close","timeout":30}`, want: SessionControl{SessionID: "a", Action: "close", Timeout: ptr(30.0)}},
		{raw: `{"action":"open"}`, wantErr: "session_id must be a non-empty string"},
		{raw: `{"session_id":"a","action":"pin"}`, wantErr: `action must be "open", "bind" or "close"`},
		{raw: `{"session_id":"a","timeout":-1}`, wantErr: "timeout must be a positive number"},
		{raw: `"a"`, wantErr: "must be an object"},
		{raw: `{"session_id":"` + strings.Repeat("x", 300) + `"}`, wantErr: "longer than 256"},
	} {
		nv := &NvExt{SessionControl: json.RawMessage(tc.raw)}
		sc, err := nv.Session()
		var ve *ValidationError
		switch {
		case tc.wantErr != "":
			if !errors.As(err, &ve) || !strings.Contains(ve.Message, tc.wantErr) {
				t.Errorf("%s: error %v, want a validation error saying %q", tc.raw, err, tc.wantErr)
			}
		case err != nil || sc == nil || sc.SessionID != tc.want.SessionID || sc.Action != tc.want.Action || (sc.Timeout == nil) != (tc.want.Timeout == nil):
			t.Errorf("%s: %+v, %v; want %+v", tc.raw, sc, err, tc.want)
		}
	}
}

func TestWithSessionKeepsTheBodysSession(t *testing.T) {
	var nv *NvExt
	if err := WithSession(&nv, "from-header"); err != nil {
		t.Fatal(err)
	}
	if err := WithSession(&nv, "derived"); err != nil {
		t.Fatal(err)
	}
	if sc, _ := nv.Session(); sc == nil || sc.SessionID != "from-header" {
		t.Fatalf("session %+v, want the first one set", sc)
	}
	if err := WithSession(&nv, ""); err != nil {
		t.Fatal(err)
	}
	if err := WithSession(new(*NvExt), strings.Repeat("x", 300)); err == nil {
		t.Fatal("a 300-byte session id was accepted")
	}
}

func ptr[T any](v T) *T { return &v }
