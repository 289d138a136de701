package config

import (
	"net"
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
	t.finish()
	return tm
}
