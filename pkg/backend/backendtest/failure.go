package backendtest

// Failure is the name of a conformance failure. The names are those of the
// reference system's ConformanceFailure enum, plus a few of this kit's own
// (marked below), so a failure reads the same in both.
type Failure string

// The failures, by check.
const (
	// Start.
	StartFailed        Failure = "StartFailed"
	EmptyModelInConfig Failure = "EmptyModelInConfig"
	// KVEventSources.
	KvEventSourcesFailed        Failure = "KvEventSourcesFailed"
	KvEventSourcesNotIdempotent Failure = "KvEventSourcesNotIdempotent"
	// SetupMetrics.
	SetupMetricsFailed            Failure = "SetupMetricsFailed"
	ComponentMetricsNotIdempotent Failure = "ComponentMetricsNotIdempotent"
	// Generate (and the stream part of the others).
	GenerateFailed           Failure = "GenerateFailed"
	NoChunksYielded          Failure = "NoChunksYielded"
	StreamYieldedError       Failure = "StreamYieldedError"
	ChunkAfterTerminal       Failure = "ChunkAfterTerminal"
	NoTerminalChunk          Failure = "NoTerminalChunk"
	CompletionTokensMismatch Failure = "CompletionTokensMismatch"
	// ContractViolation (this kit's own) is any other break of the
	// contract: a nil output or an output after Generate returned (as
	// backend.ValidateStream reports them), a panic in Abort.
	ContractViolation Failure = "ContractViolation"
	// ConcurrentGenerate.
	ConcurrentGenerateFailed Failure = "ConcurrentGenerateFailed"
	// Cancellation.
	CancellationNotObserved Failure = "CancellationNotObserved"
	CancellationIgnored     Failure = "CancellationIgnored"
	// HealthCheck (this kit's own): the canary request of a
	// backend.HealthChecker does not give a valid stream.
	HealthCheckFailed Failure = "HealthCheckFailed"
	// Cleanup.
	CleanupFailed       Failure = "CleanupFailed"
	SecondCleanupFailed Failure = "SecondCleanupFailed"
	// CleanupWithoutStart.
	CleanupWithoutStartFailed Failure = "CleanupWithoutStartFailed"
	// EventsNotJSON (this kit's own): a KV event or load metrics value
	// given to the EventPublisher does not encode to JSON.
	EventsNotJSON Failure = "EventsNotJSON"
	// GoroutineLeak (this kit's own): goroutines started by the engine
	// outlive Cleanup.
	GoroutineLeak Failure = "GoroutineLeak"
)
