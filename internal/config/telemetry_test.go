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
