package deploytest

import "testing"

func TestEnvKnown(t *testing.T) {
	help := `  -speedup-ratio float
    	how much faster than real time
  -deterministic
    	same answer everywhere
Every mocker flag can also be set as DYN_MOCKER_<FLAG> (e.g. DYN_MOCKER_SPEEDUP_RATIO=100).
  DYN_SYSTEM_PORT, DYN_SYSTEM_HOST    status server
  DYN_METRICS_<NAME>_{MIN,MAX,COUNT}       histogram buckets
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT       where to export (also OTEL_EXPORTER_OTLP_ENDPOINT; the
                                           exporters read every OTEL_EXPORTER_OTLP_* variable)
`
	for name, want := range map[string]bool{
		"DYN_SYSTEM_PORT":             true,
		"DYN_SYSTEM_HOST":             true,
		"DYN_SYSTEM":                  false, // a prefix of a known name
		"DYN_SYSTEM_PORTS":            false,
		"DYN_MOCKER_SPEEDUP_RATIO":    true,
		"DYN_MOCKER_DETERMINISTIC":    true,
		"DYN_MOCKER_SPEEDUP":          false,
		"DYN_METRICS_TTFT_MAX":        true,
		"OTEL_EXPORTER_OTLP_INSECURE": true,
		"OTEL_EXPORT_ENABLED":         false,
	} {
		if got := EnvKnown(help, name); got != want {
			t.Errorf("EnvKnown(%s) = %v, want %v", name, got, want)
		}
	}
}
