// Package preprocessor turns OpenAI requests into engine requests and
// engine outputs back into OpenAI responses, per model.
//
// Input side: a Model (built once per model card, with its tokenizer and
// compiled chat templates) renders the chat template with the request's
// messages, tools and template arguments, tokenizes, and fills a
// backend.Request with the sampling, stop and output options (PrepareChat,
// PrepareCompletion). A prompt that does not fit the context is refused
// with the numbers in the message.
//
// Output side: a Decoder per choice detokenizes incrementally, applies stop
// strings (holding back any text that could still become one), hides stop
// tokens and EOS, and reports the finish reason. ChatStream and
// CompletionStream assemble the OpenAI chunks (role first, content deltas,
// finish chunk, usage chunk), and the accumulators fold them into unary
// responses.
//
// Chat and Complete run a whole request through a next stage with the
// engine's Generate shape (the migration stage, the router, or an engine
// in tests).
package preprocessor
