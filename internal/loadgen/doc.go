// Package loadgen drives an OpenAI-compatible endpoint (/v1/chat/completions
// or /v1/completions, streamed as server-sent events) with a synthetic
// workload and measures what a client sees: time to first token (TTFT),
// inter-token latency (ITL), time per output token (TPOT), end-to-end
// latency and throughput.
//
// Run executes one load test described by a Config and returns a Report,
// which renders as a table (WriteTable) or JSON, and two reports compare
// side by side (WriteCompare). BaselineHandler is a bare net/http server
// that streams the same chunk shapes, so a run against it measures the
// load generator plus HTTP, and the difference to a run against the
// serving stack is the stack's own overhead.
//
// The workloads (Config.Workload) are unique synthetic prompts, prompts
// that share a prefix within groups, and multi-turn chat conversations
// whose every turn re-sends the history with the answers received so far
// (Report.Turns gives TTFT and prompt tokens by turn).
//
// A request sent on a pooled keep-alive connection that the server had
// closed (net/http's "server closed idle connection": the server never
// got it) is sent once more on a new connection and counted
// (Report.RetriedIdleConn), so an engine that closes idle connections,
// such as llama-server, can be measured directly.
//
// The package imports only pkg/openai (for the wire types) and the
// standard library, and reads no configuration: cmd/bench does that.
package loadgen
