package config

import (
	"net"
	"net/url"
	"strconv"
)

// Telemetry is the [telemetry] table and the top-level log_format.
type Telemetry struct {
	// Metrics turns on the Prometheus metrics (metrics = true, or an
	// address).
	Metrics bool
	// MetricsListen is the host:port of a listener of its own for GET
	// /metrics (metrics = "127.0.0.1:9464"); empty with metrics = true, which
	// serves /metrics on the HTTP listener only.
	MetricsListen string
	// Traces turns on OpenTelemetry traces exported over OTLP/HTTP (traces
	// = true, or an endpoint URL).
	Traces bool
	// TracesEndpoint is the OTLP/HTTP endpoint (traces =
	// "http://127.0.0.1:4318"); empty with traces = true, which takes the
	// standard OTEL_EXPORTER_OTLP_ENDPOINT variables.
	TracesEndpoint string
	// TracesRatio is traces_ratio: the share of the traces started by the
	// proxy that are sampled, from 0 to 1 (a request's own traceparent
	// decides for its trace). 1 when traces are on and it is not set.
	TracesRatio float64
	// JSONLogs is log_format = "json": the serve log is one JSON object a
	// line on stderr.
	JSONLogs bool
}

// telemetry decodes log_format and the [telemetry] table.
func (d *decoder) telemetry(root *table) Telemetry {
	var tm Telemetry
	if s, ok := root.str("log_format"); ok {
		switch s {
		case "text":
		case "json":
			tm.JSONLogs = true
		default:
			root.errorf("log_format", `%q is not a log format; use "text" (the default) or "json"`, s)
		}
	}
	t, ok := root.table("telemetry")
	if !ok {
		return tm
	}
	if v, ok := t.value("metrics"); ok {
		switch v := v.(type) {
		case bool:
			tm.Metrics = v
		case string:
			_, port, err := net.SplitHostPort(v)
			if err == nil {
				_, err = strconv.ParseUint(port, 10, 16)
			}
			if err != nil {
				t.errorf("metrics", `%q is not a host:port address; write metrics = true to serve /metrics on the HTTP listener, or an address like "127.0.0.1:9464" for a listener of its own`, v)
			} else {
				tm.Metrics, tm.MetricsListen = true, v
			}
		default:
			t.mismatch("metrics", v, `true, false or a "host:port" address`, "")
		}
	}
	if v, ok := t.value("traces"); ok {
		switch v := v.(type) {
		case bool:
			tm.Traces = v
		case string:
			if u, err := url.Parse(v); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				t.errorf("traces", `%q is not an OTLP/HTTP endpoint; write an http(s) URL such as "http://127.0.0.1:4318" (spans are posted to /v1/traces there), or traces = true to take OTEL_EXPORTER_OTLP_ENDPOINT`, v)
			} else {
				tm.Traces, tm.TracesEndpoint = true, v
			}
		default:
			t.mismatch("traces", v, `true, false or an "http://host:port" OTLP endpoint`, "")
		}
	}
	if tm.Traces {
		tm.TracesRatio = 1
	}
	if v, ok := t.value("traces_ratio"); ok {
		var r float64
		switch v := v.(type) {
		case float64:
			r = v
		case int64:
			r = float64(v)
		default:
			t.mismatch("traces_ratio", v, "a number from 0 to 1", unquote(v))
			r = -1
		}
		switch {
		case r < 0 && !isNumber(v):
		case r < 0 || r > 1:
			t.errorf("traces_ratio", "%v is not a ratio; write a number from 0 (sample no trace the proxy starts) to 1 (sample every one)", v)
		case !tm.Traces:
			t.errorf("traces_ratio", "is set but traces are off; add traces = true (or an OTLP endpoint) to [telemetry]")
		default:
			tm.TracesRatio = r
		}
	}
	t.finish()
	return tm
}

func isNumber(v any) bool {
	switch v.(type) {
	case float64, int64:
		return true
	}
	return false
}
