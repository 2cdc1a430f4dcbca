// Package preprocessor turns OpenAI requests into engine requests and
// engine outputs back into OpenAI responses, per model. It is the first
// stage of a model's pipeline on the frontend.
//
// Input side: a Model (built once per model card, with its tokenizer and
// compiled chat templates) renders the chat template with the request's
// messages, tools and template arguments, tokenizes, and fills a
// backend.Request with the sampling, stop and output options (PrepareChat,
// PrepareCompletion). A prompt that does not fit the context is refused
// with the numbers in the message. A model whose card says preprocessing
// "engine" gets its chat prompts' tokens from the engine instead
// (Options.EngineTokenizer). A model whose card has no tokenizer at all
// (modelcard.FromEngine: the engine processes both sides) gets its
// completions text prompts' tokens from the engine too, serves the
// engine's text, and refuses with a 400 wrapping ErrNeedsTokenizer what
// needs the tokenizer itself (logprobs, embeddings).
//
// Output side: a Decoder per choice detokenizes incrementally, applies stop
// strings (holding back any text that could still become one), hides stop
// tokens and EOS, and reports the finish reason. Outputs that carry the
// engine's text (postprocessing "engine") go through the stop strings as
// they are. A model whose card says postprocessing "worker" has its
// requests carry backend.Request.Postprocess: the worker runs the whole
// output side with a Postprocessor (this package's Decoder and output
// parsers, on the worker), and its outputs (backend.Output.Postprocessed)
// are framed as they are. Model.Chat and
// Model.Complete run a request through the next stage (a backend.Generator:
// the migration stage in the frontend, an engine in tests) and emit Events:
// the annotations nvext asks for, then the OpenAI chunks (role first,
// content deltas, the finish chunk, the usage chunk), each with the Stats
// the HTTP layer's metrics need and the Placement of the worker that
// produced it. ChatUnary and CompleteUnary, or ChatAccumulator and
// CompletionAccumulator, fold the chunks into unary responses.
//
// Embeddings: Model.Embed tokenizes each input (no chat template), sends
// one engine request per input with backend.Request.Embedding set through
// the next stage, at most EmbedConcurrency at a time, and returns the
// embeddings in input order.
//
// A Model is safe for concurrent use; it owns no goroutines (Complete and
// Embed run a batch concurrently and wait for it).
package preprocessor
