// Package openai holds the OpenAI wire types the frontend speaks: chat,
// completions and embeddings requests (with the Dynamo extensions at the
// root and under nvext), their streamed chunks and unary responses, usage, logprobs and
// the flat error body. Decoding rejects unknown fields and validates
// ranges; every such failure is a *ValidationError whose message starts
// with "Validation: " or names the unsupported parameters.
//
// The package is a leaf: it imports nothing else from this module.
package openai
