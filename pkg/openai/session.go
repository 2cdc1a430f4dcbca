package openai

import (
	"encoding/json"
	"strings"
)

// SessionHeader is the request header that names a request's session:
// the same as nvext.session_control {"session_id": ..., "action":
// "bind"}.
const SessionHeader = "X-Dynamo-Session-ID"

// maxSessionID bounds a session id's length.
const maxSessionID = 256

// Session actions (nvext.session_control.action).
const (
	SessionBind  = "bind"  // keep the session on its worker (the default)
	SessionOpen  = "open"  // the same, said at a session's first turn
	SessionClose = "close" // serve this turn on the session's worker, then forget it
)

// SessionControl is nvext.session_control: it binds the request's
// session to the worker that serves it.
type SessionControl struct {
	SessionID string `json:"session_id"`
	Action    string `json:"action,omitempty"`
	// Timeout is the binding's time to live after this turn, in seconds
	// (absent: the router's --router-session-affinity-ttl).
	Timeout *float64 `json:"timeout,omitempty"`
}

// Session returns the request's nvext.session_control, checked; nil when
// absent.
func (n *NvExt) Session() (*SessionControl, error) {
	if n == nil || len(n.SessionControl) == 0 || string(n.SessionControl) == "null" {
		return nil, nil
	}
	var sc SessionControl
	if err := json.Unmarshal(n.SessionControl, &sc); err != nil {
		return nil, invalidParam("nvext.session_control", "nvext.session_control must be an object {session_id, action, timeout}: %v", err)
	}
	switch {
	case strings.TrimSpace(sc.SessionID) == "":
		return nil, invalidParam("nvext.session_control.session_id", "nvext.session_control.session_id must be a non-empty string")
	case len(sc.SessionID) > maxSessionID:
		return nil, invalidParam("nvext.session_control.session_id", "nvext.session_control.session_id is longer than %d bytes", maxSessionID)
	case sc.Action != "" && sc.Action != SessionBind && sc.Action != SessionOpen && sc.Action != SessionClose:
		return nil, invalidParam("nvext.session_control.action", "nvext.session_control.action must be %q, %q or %q, got %q", SessionOpen, SessionBind, SessionClose, sc.Action)
	case sc.Timeout != nil && !(*sc.Timeout > 0):
		return nil, invalidParam("nvext.session_control.timeout", "nvext.session_control.timeout must be a positive number of seconds, got %v", *sc.Timeout)
	}
	return &sc, nil
}

// WithSession sets *nv's session_control to bind session id, unless the
// request names one itself (the body wins over the header and over a
// session the frontend derives). An id too long for a session is
// refused.
func WithSession(nv **NvExt, id string) error {
	if id == "" {
		return nil
	}
	if len(id) > maxSessionID {
		return invalidParam("", "%s is longer than %d bytes", SessionHeader, maxSessionID)
	}
	if *nv == nil {
		*nv = &NvExt{}
	}
	if len((*nv).SessionControl) > 0 && string((*nv).SessionControl) != "null" {
		return nil
	}
	(*nv).SessionControl, _ = json.Marshal(SessionControl{SessionID: id})
	return nil
}
