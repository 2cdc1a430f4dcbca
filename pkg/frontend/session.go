package frontend

import (
	"net/http"

	"github.com/dynamo-go/dynamo/pkg/openai"
)

// sessionRequest is a request that can belong to a session (chat,
// completions, Responses, Messages): its nvext, where the session goes.
type sessionRequest interface {
	nvext() **openai.NvExt
}

// conversationRequest is a request whose API says which conversation it
// continues (Messages; Responses with a store): the session it belongs to
// when the client names none ("": none).
type conversationRequest interface {
	conversation() string
}

func (c *chatRequest) nvext() **openai.NvExt       { return &c.req.NvExt }
func (c *completionRequest) nvext() **openai.NvExt { return &c.req.NvExt }
func (x *responsesRequest) nvext() **openai.NvExt  { return &x.chat.NvExt }
func (x *messagesRequest) nvext() **openai.NvExt   { return &x.chat.NvExt }

func (x *messagesRequest) conversation() string { return x.req.Conversation() }

func (x *responsesRequest) conversation() string {
	if x.conv == "" {
		return ""
	}
	return "responses-" + x.conv
}

// withSession sets the session of req, in this order: the body's
// nvext.session_control, the X-Dynamo-Session-ID header, the
// conversation the request continues. The session matters only with
// session affinity on (--router-session-affinity-ttl).
func withSession(r *http.Request, req apiRequest) error {
	sr, ok := req.(sessionRequest)
	if !ok {
		return nil
	}
	if err := openai.WithSession(sr.nvext(), r.Header.Get(openai.SessionHeader)); err != nil {
		return err
	}
	if c, ok := req.(conversationRequest); ok {
		return openai.WithSession(sr.nvext(), c.conversation())
	}
	return nil
}
