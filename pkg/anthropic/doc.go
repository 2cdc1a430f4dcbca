// Package anthropic is Anthropic's Messages API (POST /v1/messages and
// /v1/messages/count_tokens) as a translation at the edge onto chat
// completions, the way the Responses API is served: Decode validates a
// Messages body and translates it into the *openai.ChatCompletionRequest
// that the chat path runs, and a Builder folds the chat chunks of the
// answer into a Message, or turns them into the Messages stream's events
// (message_start, content_block_start, content_block_delta, ...).
//
// The package knows the wire shapes and the mapping only: the frontend
// serves the routes, and every request shares chat's preprocessing,
// routing and metrics. It imports no project package but pkg/openai.
package anthropic
