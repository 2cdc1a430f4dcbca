package openai

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Values of Response.Status.
const (
	ResponseCompleted  = "completed"
	ResponseIncomplete = "incomplete"
	ResponseInProgress = "in_progress"
	ResponseFailed     = "failed"
)

// Response is the Responses API's response object: the unary answer of
// POST /v1/responses, and the payload of the stream's lifecycle events.
// Besides the answer it echoes the request's settings, as OpenAI does.
type Response struct {
	ID                 string             `json:"id"`
	Object             string             `json:"object"`
	CreatedAt          int64              `json:"created_at"`
	CompletedAt        *int64             `json:"completed_at"`
	Status             string             `json:"status"`
	Error              *ResponseError     `json:"error"`
	IncompleteDetails  *IncompleteDetails `json:"incomplete_details"`
	Instructions       *string            `json:"instructions"`
	MaxOutputTokens    *int64             `json:"max_output_tokens"`
	Model              string             `json:"model"`
	Output             []OutputItem       `json:"output"`
	ParallelToolCalls  bool               `json:"parallel_tool_calls"`
	PreviousResponseID *string            `json:"previous_response_id"`
	Reasoning          json.RawMessage    `json:"reasoning"`
	Store              bool               `json:"store"`
	Temperature        float64            `json:"temperature"`
	Text               json.RawMessage    `json:"text"`
	ToolChoice         json.RawMessage    `json:"tool_choice"`
	Tools              []json.RawMessage  `json:"tools"`
	TopP               float64            `json:"top_p"`
	Truncation         string             `json:"truncation"`
	Background         bool               `json:"background"`
	Metadata           json.RawMessage    `json:"metadata"`
	User               string             `json:"user,omitempty"`
	Usage              *ResponseUsage     `json:"usage"`
}

// ResponseError is why a response failed.
type ResponseError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// IncompleteDetails says why a response is incomplete: "max_output_tokens"
// or "content_filter".
type IncompleteDetails struct {
	Reason string `json:"reason"`
}

// ResponseUsage is a response's token accounting.
type ResponseUsage struct {
	InputTokens         int                 `json:"input_tokens"`
	InputTokensDetails  InputTokensDetails  `json:"input_tokens_details"`
	OutputTokens        int                 `json:"output_tokens"`
	OutputTokensDetails OutputTokensDetails `json:"output_tokens_details"`
	TotalTokens         int                 `json:"total_tokens"`
}

// InputTokensDetails breaks the input tokens down.
type InputTokensDetails struct {
	CachedTokens int `json:"cached_tokens"`
}

// OutputTokensDetails breaks the output tokens down. Reasoning tokens
// are not counted apart (always 0).
type OutputTokensDetails struct {
	ReasoningTokens int `json:"reasoning_tokens"`
}

// Types of output items.
const (
	ItemMessage      = "message"
	ItemReasoning    = "reasoning"
	ItemFunctionCall = "function_call"
)

// OutputItem is one element of a response's output: an assistant message
// (Role, Content of output_text parts), a reasoning item (Content of
// reasoning_text parts, Summary) or a function call (CallID, Name,
// Arguments). It encodes with the fields of its Type only.
type OutputItem struct {
	Type      string          `json:"type"`
	ID        string          `json:"id"`
	Status    string          `json:"status"`
	Role      string          `json:"role,omitempty"`
	Content   []OutputContent `json:"content,omitempty"`
	Summary   []OutputContent `json:"summary,omitempty"`
	CallID    string          `json:"call_id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Arguments string          `json:"arguments,omitempty"`
}

// MarshalJSON writes the fields of the item's type, the required ones
// even when empty.
func (it OutputItem) MarshalJSON() ([]byte, error) {
	switch it.Type {
	case ItemMessage:
		return json.Marshal(struct {
			Type    string          `json:"type"`
			ID      string          `json:"id"`
			Status  string          `json:"status"`
			Role    string          `json:"role"`
			Content []OutputContent `json:"content"`
		}{it.Type, it.ID, it.Status, it.Role, nonNil(it.Content)})
	case ItemReasoning:
		return json.Marshal(struct {
			Type    string          `json:"type"`
			ID      string          `json:"id"`
			Status  string          `json:"status"`
			Summary []OutputContent `json:"summary"`
			Content []OutputContent `json:"content"`
		}{it.Type, it.ID, it.Status, nonNil(it.Summary), nonNil(it.Content)})
	case ItemFunctionCall:
		return json.Marshal(struct {
			Type      string `json:"type"`
			ID        string `json:"id"`
			Status    string `json:"status"`
			CallID    string `json:"call_id"`
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		}{it.Type, it.ID, it.Status, it.CallID, it.Name, it.Arguments})
	}
	type plain OutputItem
	return json.Marshal(plain(it))
}

// Types of output content parts.
const (
	PartOutputText    = "output_text"
	PartReasoningText = "reasoning_text"
)

// OutputContent is a content part of an output item: output_text (with
// its empty annotations and logprobs) or reasoning_text.
type OutputContent struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// MarshalJSON adds the annotations and logprobs an output_text part has.
func (c OutputContent) MarshalJSON() ([]byte, error) {
	if c.Type == PartOutputText {
		return json.Marshal(struct {
			Type        string `json:"type"`
			Text        string `json:"text"`
			Annotations []any  `json:"annotations"`
			Logprobs    []any  `json:"logprobs"`
		}{c.Type, c.Text, []any{}, []any{}})
	}
	type plain OutputContent
	return json.Marshal(plain(c))
}

func nonNil(c []OutputContent) []OutputContent {
	if c == nil {
		return []OutputContent{}
	}
	return c
}

// Types of the stream's events.
const (
	EventResponseCreated    = "response.created"
	EventResponseInProgress = "response.in_progress"
	EventResponseCompleted  = "response.completed"
	EventResponseIncomplete = "response.incomplete"
	EventResponseFailed     = "response.failed"
	EventOutputItemAdded    = "response.output_item.added"
	EventOutputItemDone     = "response.output_item.done"
	EventContentPartAdded   = "response.content_part.added"
	EventContentPartDone    = "response.content_part.done"
	EventOutputTextDelta    = "response.output_text.delta"
	EventOutputTextDone     = "response.output_text.done"
	EventReasoningTextDelta = "response.reasoning_text.delta"
	EventReasoningTextDone  = "response.reasoning_text.done"
	EventFunctionArgsDelta  = "response.function_call_arguments.delta"
	EventFunctionArgsDone   = "response.function_call_arguments.done"
)

// Defaults a response echoes for settings the request left out.
const (
	responseIDPrefix           = "resp_"
	defaultResponseTemperature = 1.0
)

// ResponseEvent is one event of a streamed response, sent as an SSE event
// named by Type. Which fields are set depends on Type, as in the OpenAI
// SDKs' event types; every event has its SequenceNumber (0, 1, 2, ...).
type ResponseEvent struct {
	Type           string         `json:"type"`
	SequenceNumber int            `json:"sequence_number"`
	Response       *Response      `json:"response,omitempty"`
	OutputIndex    *int           `json:"output_index,omitempty"`
	ItemID         string         `json:"item_id,omitempty"`
	ContentIndex   *int           `json:"content_index,omitempty"`
	Item           *OutputItem    `json:"item,omitempty"`
	Part           *OutputContent `json:"part,omitempty"`
	Delta          *string        `json:"delta,omitempty"`
	Text           *string        `json:"text,omitempty"`
	Arguments      *string        `json:"arguments,omitempty"`
	// Logprobs is [] on output_text events, absent on the others.
	Logprobs *[]any `json:"logprobs,omitempty"`
}

// ResponseBuilder translates the chat completion chunks of one request
// into a Responses API answer: the stream's events as the chunks arrive,
// and the response object they add up to. Output items are opened in the
// order their first delta arrives (reasoning, text, each tool call) and
// an item is done when the next one opens or the stream finishes; tool
// calls therefore have to arrive one after the other, as OpenAI's
// streaming shape sends them (a delta for a call that is already done is
// dropped). The unary answer is the same translation with the events
// thrown away. Only choice 0 is read.
type ResponseBuilder struct {
	resp  Response
	seq   int
	open  int // index in resp.Output of the item taking deltas, or -1
	calls map[int]int
	// base names the items: msg_<base>, rs_<base>, fc_<base>_<n>.
	base    string
	nCalls  int
	finish  string
	started bool
}

// NewResponseBuilder starts the response "resp_<id>" for req (which gives
// the echoed settings) and model, created at created.
func NewResponseBuilder(id string, req *ResponsesRequest, model string, created time.Time) *ResponseBuilder {
	r := Response{
		ID: responseIDPrefix + id, Object: "response", CreatedAt: created.Unix(),
		Status: ResponseInProgress, Model: model, Output: []OutputItem{},
		Instructions: req.Instructions, MaxOutputTokens: req.MaxOutputTokens,
		ParallelToolCalls: req.ParallelToolCalls == nil || *req.ParallelToolCalls,
		Reasoning:         req.Reasoning,
		Temperature:       defaultResponseTemperature, TopP: 1,
		Text:       json.RawMessage(`{"format":{"type":"text"}}`),
		ToolChoice: json.RawMessage(`"auto"`),
		Tools:      req.Tools, Truncation: "disabled",
		Metadata: json.RawMessage(`{}`), User: req.User,
		Store: req.StoreWanted(), PreviousResponseID: req.PreviousResponseID,
		Background: req.InBackground(),
	}
	if r.Tools == nil {
		r.Tools = []json.RawMessage{}
	}
	if req.Temperature != nil {
		r.Temperature = *req.Temperature
	}
	if req.TopP != nil {
		r.TopP = *req.TopP
	}
	if present(req.Text) {
		r.Text = req.Text
	}
	if present(req.ToolChoice) {
		r.ToolChoice = req.ToolChoice
	}
	if present(req.Metadata) {
		r.Metadata = req.Metadata
	}
	return &ResponseBuilder{resp: r, open: -1, calls: map[int]int{}, base: id}
}

// Start returns the stream's first events, response.created and
// response.in_progress, or nothing when already started. Add starts the
// stream itself if needed.
func (b *ResponseBuilder) Start() []ResponseEvent {
	if b.started {
		return nil
	}
	b.started = true
	return []ResponseEvent{
		b.lifecycle(EventResponseCreated),
		b.lifecycle(EventResponseInProgress),
	}
}

// Add folds one chat chunk in and returns the events it gives.
func (b *ResponseBuilder) Add(c *ChatCompletionChunk) []ResponseEvent {
	evs := b.Start()
	if c.Model != "" {
		b.resp.Model = c.Model
	}
	if c.Usage != nil {
		b.resp.Usage = responseUsage(c.Usage)
	}
	for _, ch := range c.Choices {
		if ch.Index != 0 {
			continue
		}
		d := ch.Delta
		if d.ReasoningContent != nil && *d.ReasoningContent != "" {
			evs = b.textDelta(evs, ItemReasoning, *d.ReasoningContent)
		}
		if d.Content != nil && *d.Content != "" {
			evs = b.textDelta(evs, ItemMessage, *d.Content)
		}
		for k, tc := range d.ToolCalls {
			idx := k
			if tc.Index != nil {
				idx = *tc.Index
			}
			evs = b.callDelta(evs, idx, tc)
		}
		if ch.FinishReason != nil {
			b.finish = *ch.FinishReason
		}
	}
	return evs
}

// Finish ends the stream at now: the open item is done (incomplete when
// the answer was cut at max_output_tokens), and response.completed, or
// response.incomplete for a length or content-filter finish, carries the
// whole response.
func (b *ResponseBuilder) Finish(now time.Time) []ResponseEvent {
	evs := b.Start()
	status := ResponseCompleted
	switch b.finish {
	case FinishLength:
		status = ResponseIncomplete
		b.resp.IncompleteDetails = &IncompleteDetails{Reason: "max_output_tokens"}
	case FinishContentFilter:
		status = ResponseIncomplete
		b.resp.IncompleteDetails = &IncompleteDetails{Reason: "content_filter"}
	}
	itemStatus := ResponseCompleted
	if status == ResponseIncomplete {
		itemStatus = ResponseIncomplete
	}
	evs = b.closeOpen(evs, itemStatus)
	b.resp.Status = status
	if status == ResponseCompleted {
		t := now.Unix()
		b.resp.CompletedAt = &t
	}
	if b.resp.Usage == nil {
		b.resp.Usage = &ResponseUsage{}
	}
	typ := EventResponseCompleted
	if status == ResponseIncomplete {
		typ = EventResponseIncomplete
	}
	return append(evs, b.lifecycle(typ))
}

// Fail ends a stream that broke after it started: response.failed, with
// the items so far (the open one still in_progress) and the error.
func (b *ResponseBuilder) Fail(message string) []ResponseEvent {
	evs := b.Start()
	b.resp.Status = ResponseFailed
	b.resp.Error = &ResponseError{Code: "server_error", Message: message}
	return append(evs, b.lifecycle(EventResponseFailed))
}

// Response returns the response as built so far; after Finish, the
// unary answer.
func (b *ResponseBuilder) Response() *Response {
	r := b.snapshot()
	return &r
}

// snapshot copies the response and its items, so that an event keeps the
// state it was sent with.
func (b *ResponseBuilder) snapshot() Response {
	r := b.resp
	r.Output = make([]OutputItem, len(b.resp.Output))
	for i, it := range b.resp.Output {
		it.Content = append([]OutputContent(nil), it.Content...)
		it.Summary = append([]OutputContent(nil), it.Summary...)
		r.Output[i] = it
	}
	return r
}

func (b *ResponseBuilder) lifecycle(typ string) ResponseEvent {
	r := b.snapshot()
	return b.event(ResponseEvent{Type: typ, Response: &r})
}

// event numbers ev.
func (b *ResponseBuilder) event(ev ResponseEvent) ResponseEvent {
	ev.SequenceNumber = b.seq
	b.seq++
	return ev
}

// textDelta appends text to the open item of kind (message or
// reasoning), opening one first if the open item is another.
func (b *ResponseBuilder) textDelta(evs []ResponseEvent, kind, text string) []ResponseEvent {
	if b.open < 0 || b.resp.Output[b.open].Type != kind {
		evs = b.closeOpen(evs, ResponseCompleted)
		it := OutputItem{Type: kind, ID: b.itemID(kind), Status: ResponseInProgress}
		part := OutputContent{Type: PartReasoningText}
		if kind == ItemMessage {
			it.Role = "assistant"
			part.Type = PartOutputText
		}
		evs = b.addItem(evs, it)
		it.Content = []OutputContent{part}
		b.resp.Output[b.open] = it
		evs = append(evs, b.event(ResponseEvent{
			Type: EventContentPartAdded, OutputIndex: intp(b.open), ItemID: it.ID, ContentIndex: intp(0), Part: &part,
		}))
	}
	it := &b.resp.Output[b.open]
	it.Content[0].Text += text
	ev := ResponseEvent{Type: EventReasoningTextDelta, OutputIndex: intp(b.open), ItemID: it.ID, ContentIndex: intp(0), Delta: &text}
	if kind == ItemMessage {
		ev.Type = EventOutputTextDelta
		ev.Logprobs = &[]any{}
	}
	return append(evs, b.event(ev))
}

// callDelta applies the delta of tool call idx: its first delta opens a
// function_call item, arguments are appended.
func (b *ResponseBuilder) callDelta(evs []ResponseEvent, idx int, tc ToolCall) []ResponseEvent {
	at, seen := b.calls[idx]
	if !seen {
		evs = b.closeOpen(evs, ResponseCompleted)
		callID := tc.ID
		if callID == "" {
			callID = fmt.Sprintf("call_%s_%d", b.base, b.nCalls)
		}
		it := OutputItem{Type: ItemFunctionCall, ID: fmt.Sprintf("fc_%s_%d", b.base, b.nCalls), Status: ResponseInProgress, CallID: callID, Name: tc.Function.Name}
		b.nCalls++
		evs = b.addItem(evs, it)
		at = b.open
		b.calls[idx] = at
	}
	if at != b.open {
		return evs // the call is done already: see ResponseBuilder
	}
	it := &b.resp.Output[at]
	if it.Name == "" {
		it.Name = tc.Function.Name
	}
	args := argumentsText(tc.Function.Arguments)
	if args == "" {
		return evs
	}
	it.Arguments += args
	return append(evs, b.event(ResponseEvent{Type: EventFunctionArgsDelta, OutputIndex: intp(at), ItemID: it.ID, Delta: &args}))
}

// argumentsText reads a streamed arguments fragment: a JSON string, or
// (from clients that send one) a JSON object taken as its text.
func argumentsText(raw json.RawMessage) string {
	if !present(raw) {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

// addItem appends it to the output, makes it the open item and returns
// response.output_item.added.
func (b *ResponseBuilder) addItem(evs []ResponseEvent, it OutputItem) []ResponseEvent {
	b.resp.Output = append(b.resp.Output, it)
	b.open = len(b.resp.Output) - 1
	added := it
	return append(evs, b.event(ResponseEvent{Type: EventOutputItemAdded, OutputIndex: intp(b.open), Item: &added}))
}

// closeOpen ends the open item with status: the done events of its text
// or arguments, then response.output_item.done.
func (b *ResponseBuilder) closeOpen(evs []ResponseEvent, status string) []ResponseEvent {
	if b.open < 0 {
		return evs
	}
	i := b.open
	b.open = -1
	it := &b.resp.Output[i]
	it.Status = status
	switch it.Type {
	case ItemMessage, ItemReasoning:
		part := it.Content[0]
		text := part.Text
		done := ResponseEvent{Type: EventReasoningTextDone, OutputIndex: intp(i), ItemID: it.ID, ContentIndex: intp(0), Text: &text}
		if it.Type == ItemMessage {
			done.Type = EventOutputTextDone
			done.Logprobs = &[]any{}
		}
		evs = append(evs, b.event(done))
		evs = append(evs, b.event(ResponseEvent{Type: EventContentPartDone, OutputIndex: intp(i), ItemID: it.ID, ContentIndex: intp(0), Part: &part}))
	case ItemFunctionCall:
		args := it.Arguments
		evs = append(evs, b.event(ResponseEvent{Type: EventFunctionArgsDone, OutputIndex: intp(i), ItemID: it.ID, Arguments: &args}))
	}
	done := *it
	done.Content = append([]OutputContent(nil), it.Content...)
	return append(evs, b.event(ResponseEvent{Type: EventOutputItemDone, OutputIndex: intp(i), Item: &done}))
}

// itemID names a message or reasoning item: msg_<base>, rs_<base>, with
// the output index appended when the kind occurs again.
func (b *ResponseBuilder) itemID(kind string) string {
	prefix := "msg_"
	if kind == ItemReasoning {
		prefix = "rs_"
	}
	id := prefix + b.base
	for _, it := range b.resp.Output {
		if it.ID == id {
			return fmt.Sprintf("%s_%d", id, len(b.resp.Output))
		}
	}
	return id
}

// responseUsage converts chat usage.
func responseUsage(u *Usage) *ResponseUsage {
	r := &ResponseUsage{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens, TotalTokens: u.TotalTokens}
	if u.PromptTokensDetails != nil {
		r.InputTokensDetails.CachedTokens = u.PromptTokensDetails.CachedTokens
	}
	return r
}

// OutputText returns the concatenated text of the response's message
// items.
func (r *Response) OutputText() string {
	var s strings.Builder
	for _, it := range r.Output {
		if it.Type != ItemMessage {
			continue
		}
		for _, c := range it.Content {
			if c.Type == PartOutputText {
				s.WriteString(c.Text)
			}
		}
	}
	return s.String()
}

func intp(n int) *int { return &n }
