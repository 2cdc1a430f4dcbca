// Package admission holds the admission stage of a model's chain: the
// bounded, priority-ordered queue in front of routing, in every router
// mode. Stage is a backend.Generator that wraps the rest of the chain
// (Before); it is built before the routers it gates, which are handed it.
//
// # Capacity
//
// The stage weighs each available worker's load (Workers, which the
// pipeline builds over the model's push router): this frontend's
// requests in flight to it, counted from the moment they are sent to it,
// and their prompt tokens not yet prefilled (until the first output).
// A worker is saturated
//
//   - by count: its requests reach its capacity (Config.Capacity: the
//     card's max_num_seqs times its data-parallel size, or
//     Config.WorkerLimit when the card says nothing; 0 is unlimited);
//   - by tokens (spec §4.6): its prompt tokens not yet prefilled exceed
//     Config.TokenBudget (--router-queue-threshold times the card's
//     max_num_batched_tokens times its data-parallel size; 0 is off);
//   - by what it publishes (WorkerLoad.Busy): its own count of running
//     and waiting requests reaches max_num_seqs on every rank (other
//     frontends' requests included), the KV router's busy thresholds
//     say so (router mode kv, also as set through /busy_threshold), or
//     it refused a request a moment ago.
//
// A request is admitted while the admitted requests not yet sent to a
// worker fit in the headroom left on the available workers that are not
// saturated. A model with no available worker admits everything: that
// is not overload, and the router answers "no instances". Unsaturated
// lets the router pick among the workers with room (round-robin and
// random through their policy, the KV router through its candidates).
//
// # The queue
//
// When the model is saturated a request waits in a queue of at most
// Config.QueueMax requests, ordered by Config.Policy (the reference
// router's --router-queue-policy): fcfs, the default, by effective
// arrival, its arrival time less its priority jump
// (backend.Routing.PriorityJump, from nvext.agent_hints, in seconds),
// earliest first, so that a jump moves a request ahead of those that
// arrived less than that many seconds before it; lcfs, latest first, for
// experiments; wspt, the highest (1 + jump) / prompt tokens first, which
// favours short prompts. Capacity that frees (a request's first output,
// its end; the push router calls Kick) goes to the head at once; waiters
// also look again every Config.Recheck, for the workers' published load.
//
// A request that arrives at a full queue, or waits longer than
// Config.QueueTimeout, is refused at once with a *RefusedError (matching
// ErrRefused and runtime.ErrWorkerOverloaded), carrying how long to wait
// before retrying. A request whose context ends while it waits leaves
// the queue at once and returns the context's error.
//
// # Refused by a worker
//
// A worker may refuse an admitted request before it starts: its own
// queue is full (ResourceExhausted), it is alive but did not accept the
// request within the request plane's ack timeout
// (runtime.ErrAckTimeout), or the KV router found every worker busy.
// That is overload, never a fault: the request goes back to the queue
// in its original place (after Config.Recheck, so that the refusal is
// seen), and waits for a worker with room within the queue timeout from
// its arrival. Without a queue, or once that time is spent, it is
// refused with the worker's reason. Requeues and refusals are counted by
// reason.
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
