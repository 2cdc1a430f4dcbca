package kvblock

// Event-plane topic names (the reference system's KV_EVENT_SUBJECT and
// KV_METRICS_SUBJECT) and the load-metrics request-plane endpoint.
const (
	KVEventTopic        = "kv-events"
	LoadMetricsTopic    = "kv_metrics"
	LoadMetricsEndpoint = "load_metrics"
)

// KVEventsSubject returns the component-scoped subject KV events are
// published on: namespace.{namespace}.component.{component}.kv-events.
func KVEventsSubject(namespace, component string) string {
	return ComponentSubject(namespace, component, KVEventTopic)
}

// ComponentSubject returns the event-plane subject of a component-scoped
// topic: namespace.{namespace}.component.{component}.{topic}.
func ComponentSubject(namespace, component, topic string) string {
	return "namespace." + namespace + ".component." + component + "." + topic
}

// LoadMetricsSubject returns the namespace-scoped subject load events are
// published on (E1): namespace.{namespace}.kv_metrics.
func LoadMetricsSubject(namespace string) string {
	return "namespace." + namespace + "." + LoadMetricsTopic
}
