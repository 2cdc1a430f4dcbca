package frontend

import (
	"net/http"

	"github.com/dynamo-go/dynamo/pkg/openai"
)

// sessionRequest is a request that can belong to a session (chat,
// completions, Responses): its nvext, where the X-Dynamo-Session-ID
// header is put.
type sessionRequest interface {
	nvext() **openai.NvExt
}

func (c *chatRequest) nvext() **openai.NvExt       { return &c.req.NvExt }
func (c *completionRequest) nvext() **openai.NvExt { return &c.req.NvExt }
func (x *responsesRequest) nvext() **openai.NvExt  { return &x.chat.NvExt }

// withSessionHeader puts the request's X-Dynamo-Session-ID header into
// its nvext.session_control, unless the body names a session itself.
func withSessionHeader(r *http.Request, req apiRequest) error {
	id := r.Header.Get(openai.SessionHeader)
	sr, ok := req.(sessionRequest)
	if id == "" || !ok {
		return nil
	}
	return openai.WithSession(sr.nvext(), id)
}
