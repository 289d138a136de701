package config

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestTelemetry(t *testing.T) {
	tests := []struct {
		name, doc string
		want      Telemetry
		err       string
	}{
		{name: "off by default", doc: ""},
		{name: "metrics on the HTTP listener", doc: "[telemetry]\nmetrics = true\n", want: Telemetry{Metrics: true}},
		{name: "metrics off", doc: "[telemetry]\nmetrics = false\n"},
		{name: "metrics on a listener of their own", doc: "[telemetry]\nmetrics = \"127.0.0.1:9464\"\n",
			want: Telemetry{Metrics: true, MetricsListen: "127.0.0.1:9464"}},
		{name: "traces to an endpoint", doc: "[telemetry]\ntraces = \"http://127.0.0.1:4318\"\n",
			want: Telemetry{Traces: true, TracesEndpoint: "http://127.0.0.1:4318", TracesRatio: 1}},
		{name: "traces from the environment, sampled", doc: "[telemetry]\ntraces = true\ntraces_ratio = 0.25\n",
			want: Telemetry{Traces: true, TracesRatio: 0.25}},
		{name: "traces ratio 0", doc: "[telemetry]\ntraces = true\ntraces_ratio = 0\n", want: Telemetry{Traces: true}},
		{name: "traces off", doc: "[telemetry]\ntraces = false\n"},
		{name: "bad traces endpoint", doc: "[telemetry]\ntraces = \"127.0.0.1:4318\"\n",
			err: `proxy.toml:2:1: telemetry.traces: "127.0.0.1:4318" is not an OTLP/HTTP endpoint; write an http(s) URL such as "http://127.0.0.1:4318" (spans are posted to /v1/traces there), or traces = true to take OTEL_EXPORTER_OTLP_ENDPOINT`},
		{name: "ratio out of range", doc: "[telemetry]\ntraces = true\ntraces_ratio = 1.5\n",
			err: `proxy.toml:3:1: telemetry.traces_ratio: 1.5 is not a ratio; write a number from 0 (sample no trace the proxy starts) to 1 (sample every one)`},
		{name: "ratio without traces", doc: "[telemetry]\ntraces_ratio = 0.5\n",
			err: `proxy.toml:2:1: telemetry.traces_ratio: is set but traces are off; add traces = true (or an OTLP endpoint) to [telemetry]`},
		{name: "ratio as a string", doc: "[telemetry]\ntraces = true\ntraces_ratio = \"0.5\"\n",
			err: `proxy.toml:3:1: telemetry.traces_ratio: expected a number from 0 to 1, found string; remove the quotes`},
		{name: "json logs", doc: "log_format = \"json\"\n", want: Telemetry{JSONLogs: true}},
		{name: "text logs", doc: "log_format = \"text\"\n"},
		{name: "bad address", doc: "[telemetry]\nmetrics = \"9464\"\n",
			err: `proxy.toml:2:1: telemetry.metrics: "9464" is not a host:port address; write metrics = true to serve /metrics on the HTTP listener, or an address like "127.0.0.1:9464" for a listener of its own`},
		{name: "bad type", doc: "[telemetry]\nmetrics = 9464\n",
			err: `proxy.toml:2:1: telemetry.metrics: expected true, false or a "host:port" address, found integer`},
		{name: "bad format", doc: "log_format = \"xml\"\n",
			err: `proxy.toml:1:1: log_format: "xml" is not a log format; use "text" (the default) or "json"`},
		{name: "unknown key", doc: "[telemetry]\nmetric = true\n",
			err: `proxy.toml:2:1: telemetry.metric: unknown key; did you mean "metrics"?`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := Parse("proxy.toml", []byte(tt.doc))
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("Parse error = %v, want %s", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if diff := cmp.Diff(tt.want, cfg.Telemetry); diff != "" {
				t.Errorf("Telemetry (-want +got):\n%s", diff)
			}
		})
	}
}
