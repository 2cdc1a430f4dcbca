// Package admission holds the admission stage of a model's chain: the
// bounded, priority-ordered queue in front of routing, in every router
// mode. Stage is a backend.Generator that wraps the rest of the chain.
//
// # Capacity
//
// The stage counts the requests this frontend has in flight to each of the
// model's workers. A request counts as "unplaced" from its admission until
// its first output names its worker (backend.Output.Placement, set by the
// push router on every output), then against that worker until its stream
// ends, fails or is cancelled. When a migration re-issues it elsewhere, it
// moves to the new worker with the new stream's first output.
//
// A worker is saturated when its count reaches its capacity (Config.Capacity:
// the card's max_num_seqs times its data-parallel size, or
// Config.WorkerLimit when the card says nothing; 0 is unlimited), or when
// the Busy checker says so (router mode kv: the busy thresholds, also
// those set through /busy_threshold). A request is admitted while the
// unplaced requests fit in the headroom left on the available workers
// that are not busy. A model with no available worker admits everything:
// that is not overload, and the router answers "no instances".
//
// # The queue
//
// When the model is saturated a request waits in a queue of at most
// Config.QueueMax requests, ordered by effective arrival: its arrival
// time less its priority jump (backend.Routing.PriorityJump, from
// nvext.agent_hints.latency_sensitivity, in seconds), earliest first —
// the fcfs policy of the reference router, where a jump moves a request
// ahead of those that arrived less than that many seconds before it. A
// slot that frees (a stream ends, fails or is cancelled) goes to the
// head at once; waiters also look again every Config.Recheck, for busy
// workers that recovered and workers that joined.
//
// A request that arrives at a full queue, or waits longer than
// Config.QueueTimeout, is refused at once with a *RefusedError (matching
// ErrRefused and runtime.ErrWorkerOverloaded), carrying how long to wait
// before retrying. A request whose context ends while it waits leaves
// the queue at once and returns the context's error.
//
// # Where it sits
//
// In front of migration: a request is admitted once, and a migration
// re-issues it on its admitted slot, so a migrated request never queues
// behind new ones and is never refused. Requests pinned to a worker
// (backend_instance_id, prefill or decode worker ids) are counted but not
// queued: the client chose the worker.
//
// A Stage is safe for concurrent use and starts no goroutines: a waiting
// request waits on its own goroutine.
package admission
