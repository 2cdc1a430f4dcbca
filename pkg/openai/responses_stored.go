package openai

import (
	"encoding/json"
	"fmt"
)

// Statuses of a background response besides those of Response.Status.
const (
	ResponseQueued    = "queued"
	ResponseCancelled = "cancelled"
)

// StoreWanted reports whether the client asks for the response to be
// stored: store true, or absent (OpenAI's default).
func (r *ResponsesRequest) StoreWanted() bool { return r.Store == nil || *r.Store }

// InBackground reports whether the client asks for a background
// response.
func (r *ResponsesRequest) InBackground() bool { return r.Background != nil && *r.Background }

// InputItems returns the request's input as a list of item objects, as a
// stored response keeps them: a string input is one user message; a
// message's string content becomes one input_text part (output_text for
// an assistant's); a message item without a type gets type "message" and
// status "completed"; each item without an id gets idPrefix and its
// index. Items are otherwise kept as sent. ToChat reports invalid items;
// this only needs each to be an object.
func (r *ResponsesRequest) InputItems(idPrefix string) ([]json.RawMessage, error) {
	var s string
	if json.Unmarshal(r.Input, &s) == nil {
		b, err := json.Marshal(map[string]any{
			"id": idPrefix + "0", "type": "message", "role": "user", "status": "completed",
			"content": []OutputContent{{Type: PartInputText, Text: s}},
		})
		return []json.RawMessage{b}, err
	}
	var items []map[string]json.RawMessage
	if err := json.Unmarshal(r.Input, &items); err != nil {
		return nil, invalidParam("input", "input must be a string or a list of input item objects")
	}
	out := make([]json.RawMessage, len(items))
	for i, it := range items {
		if it == nil {
			return nil, invalidParam(fmt.Sprintf("input[%d]", i), "input[%d] must be an input item object", i)
		}
		if _, ok := it["id"]; !ok {
			it["id"], _ = json.Marshal(fmt.Sprintf("%s%d", idPrefix, i))
		}
		if _, ok := it["type"]; !ok && it["role"] != nil {
			it["type"] = json.RawMessage(`"message"`)
		}
		var typ, role, text string
		_ = json.Unmarshal(it["type"], &typ)
		_ = json.Unmarshal(it["role"], &role)
		if typ == "message" {
			if _, ok := it["status"]; !ok {
				it["status"] = json.RawMessage(`"completed"`)
			}
			if json.Unmarshal(it["content"], &text) == nil {
				part := PartInputText
				if role == "assistant" {
					part = PartOutputText
				}
				it["content"], _ = json.Marshal([]OutputContent{{Type: part, Text: text}})
			}
		}
		b, err := json.Marshal(it)
		if err != nil {
			return nil, err
		}
		out[i] = b
	}
	return out, nil
}

// PartInputText is the content part of a client's text.
const PartInputText = "input_text"

// SetInput replaces the request's input with items (a stored
// conversation followed by the request's own items), for ToChat.
func (r *ResponsesRequest) SetInput(items []json.RawMessage) error {
	b, err := json.Marshal(items)
	if err != nil {
		return err
	}
	r.Input = b
	return nil
}

// ResponseItemList is the answer of GET /v1/responses/{id}/input_items:
// a page of items in OpenAI's list shape.
type ResponseItemList struct {
	Object  string            `json:"object"` // "list"
	Data    []json.RawMessage `json:"data"`
	FirstID *string           `json:"first_id"`
	LastID  *string           `json:"last_id"`
	HasMore bool              `json:"has_more"`
}

// DeletedResponse is the answer of DELETE /v1/responses/{id}.
type DeletedResponse struct {
	ID      string `json:"id"`
	Object  string `json:"object"` // "response"
	Deleted bool   `json:"deleted"`
}
