package loadgen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/dynamo-go/dynamo/pkg/openai"
)

// conversation is the history of one multi-turn conversation: its
// messages so far, kept as the JSON the next request carries, so a turn
// encodes only its new messages.
//
// Its words come from the prompt vocabulary (see Synthetic) drawn by
// requestRand(seed, conversation number): a conversation is a pure
// function of the seed, its number and the answers it was given. The
// first user message starts with the conversation number, so no two
// conversations share a prefix beyond the chat template's.
type conversation struct {
	id       int
	rng      *rand.Rand
	firstLen int // words of the first user message
	turnLen  int // words of every later user message
	// turn is the number of user messages added so far.
	turn int
	// words counts the words of the messages so far.
	words int
	// msgs are the messages' JSON objects, separated by commas.
	msgs []byte
	// measured is set once one of its turns was measured (not warmup).
	measured bool
}

func newConversation(id int, seed uint64, firstLen, turnLen int) *conversation {
	return &conversation{id: id, rng: requestRand(seed, id), firstLen: firstLen, turnLen: turnLen}
}

// addUser adds the next turn's user message: the first carries firstLen
// words led by the conversation number, every later one turnLen words.
func (c *conversation) addUser() {
	var b strings.Builder
	n := c.turnLen
	if c.turn == 0 {
		n = c.firstLen
		b.Grow(n * 7)
		b.WriteString(strconv.Itoa(c.id))
		appendWords(&b, c.rng, n-1)
	} else {
		b.Grow(n * 7)
		appendWords(&b, c.rng, n)
	}
	c.turn++
	c.words += n
	c.add("user", strings.TrimPrefix(b.String(), " "))
}

// addAnswer adds the assistant's answer to the last turn, text exactly as
// the server streamed it.
func (c *conversation) addAnswer(text string) {
	c.words += len(strings.Fields(text))
	c.add("assistant", text)
}

// add appends the message {"role":role,"content":text}.
func (c *conversation) add(role, text string) {
	content, _ := json.Marshal(text) // a string always encodes
	if len(c.msgs) > 0 {
		c.msgs = append(c.msgs, ',')
	}
	c.msgs = append(c.msgs, `{"role":"`...)
	c.msgs = append(c.msgs, role...)
	c.msgs = append(c.msgs, `","content":`...)
	c.msgs = append(c.msgs, content...)
	c.msgs = append(c.msgs, '}')
}

// chatFrame is the JSON of a chat request around its messages: head
// ends with `"messages":[`, tail starts with its `]`.
type chatFrame struct {
	head, tail []byte
}

// messagesKey is where a chat request's messages go. It cannot occur
// inside a JSON string (its quotes would be escaped there), so its first
// occurrence is the key.
const messagesKey = `"messages":[`

// newChatFrame encodes the chat request q sends with no messages and
// splits it where they go.
func (q *requester) newChatFrame() (chatFrame, error) {
	b, err := json.Marshal(q.chatRequest([]openai.Message{}))
	if err != nil {
		return chatFrame{}, fmt.Errorf("loadgen: encode request: %w", err)
	}
	i := bytes.Index(b, []byte(messagesKey))
	if i < 0 {
		return chatFrame{}, fmt.Errorf("loadgen: encode request: no messages in %s", b)
	}
	i += len(messagesKey)
	return chatFrame{head: b[:i], tail: b[i:]}, nil
}

// body returns the request that sends msgs (JSON objects separated by
// commas).
func (f chatFrame) body(msgs []byte) []byte {
	b := make([]byte, 0, len(f.head)+len(msgs)+len(f.tail))
	b = append(b, f.head...)
	b = append(b, msgs...)
	return append(b, f.tail...)
}
