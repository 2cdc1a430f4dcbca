// Package pipeline owns the models a frontend serves and the chain of
// stages that serves each one's requests.
//
// The Registry follows the model cards workers publish in discovery. When
// a model's first worker appears it builds the model: its preprocessor
// (chat template, tokenizer) and its chain, each stage a
// backend.Generator wrapping the next,
//
//	[admission.Stage] -> migration.Stage -> prefill.Stage -> [kv.Router] -> router.PushRouter -> runtime -> workers
//
// (the admission queue only with Config.Queue, the KV router only with
// RouterKV). Cards of model type Prefill are the
// model's prefill workers: they form its prefill pool, which its prefill
// stage uses while the pool has workers (docs/disaggregation.md); they
// are not a model of their own. Workers joining and leaving are
// passed on to the push router's view of the model's instances and to the
// KV router; the model goes with its last worker. The HTTP layer asks for
// a model by name (Registry.Lookup) or for the list (Registry.Models), and
// runs a request with the model's Preprocessor over the Model, which is
// the head of its chain.
//
// # Lifecycle
//
// New builds a Registry and starts nothing. Run lists, then watches, the
// cards until its context ends, and owns every goroutine the models need
// (the KV routers' subscriptions and expiry); it returns only after they
// have all returned. Registry and Model are safe for concurrent use.
//
// # Where things go
//
// A new stage of every request (say, an admission queue) is a
// backend.Generator in its own package, wired into the chain in build.go.
// A new router policy is a router.Policy selected in Registry.policy, with
// its mode constant in config.go.
package pipeline
