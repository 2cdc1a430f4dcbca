package anthropic

import (
	"crypto/sha256"
	"encoding/hex"
)

// Conversation names the conversation a request continues: a hash of its
// system prompt and its first turn, which every later turn of the same
// conversation re-sends unchanged. The frontend keeps a conversation on
// one worker by it when the client names no session (pkg/router/affinity).
func (r *Request) Conversation() string {
	h := sha256.New()
	h.Write(r.System)
	h.Write([]byte{0})
	if len(r.Messages) > 0 {
		h.Write([]byte(r.Messages[0].Role))
		h.Write([]byte{0})
		h.Write(r.Messages[0].Content)
	}
	return "messages-" + hex.EncodeToString(h.Sum(nil)[:16])
}
