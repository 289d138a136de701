package config

// This file decodes the supervision keys of a server:
//
//	[servers.files.health]                # checked through the real path
//	tool = "list_allowed_directories"     # or resource = "file:///..."
//	arguments = { }                       # the tool's arguments
//	expect = "/"                          # must appear in the answer's text
//	interval = "30s"
//	timeout = "10s"                       # default: the server's call_timeout
//	failures = 3                          # in a row, then the server is restarted
//
//	[servers.files.restart]
//	enabled = true                        # false: a server that exits stays down
//	initial_backoff = "500ms"             # doubles on every failure...
//	max_backoff = "30s"                   # ...up to this, with jitter
//	max_failures = 5                      # failures within failure_window mark it failed
//	failure_window = "1m"
//	failed_retry = "5m"                   # how often a failed server is tried again

import (
	"encoding/json"
	"time"
)

// Health is a server's health check ([servers.NAME.health]).
type Health struct {
	Tool      string
	Arguments json.RawMessage // nil for none
	Resource  string
	Expect    string
	Interval  time.Duration // 0: the proxy's default (30s)
	Timeout   time.Duration // 0: the server's call timeout
	Failures  int           // 0: the proxy's default (3)
}

// Restart is how a server that exits is restarted ([servers.NAME.restart]).
// Zero values take the proxy's defaults.
type Restart struct {
	Disabled      bool
	InitialDelay  time.Duration
	MaxDelay      time.Duration
	MaxFailures   int
	FailureWindow time.Duration
	FailedRetry   time.Duration
}

// serverSupervision decodes the health and restart tables of the server table
// t into s.
func (d *decoder) serverSupervision(t *table, s *Server) {
	if h, ok := t.tableOf("health", `a table such as { tool = "ping_tool", expect = "ok" }`); ok {
		var hc Health
		hc.Tool, _ = h.str("tool")
		hc.Resource, _ = h.str("resource")
		hc.Expect, _ = h.str("expect")
		if v, ok := h.value("arguments"); ok {
			if m, isMap := v.(map[string]any); !isMap {
				h.mismatch("arguments", v, "a table of the tool's arguments, like { path = \".\" }", "")
			} else if b, err := json.Marshal(m); err != nil {
				h.errorf("arguments", "cannot encode as JSON: %v", err)
			} else {
				hc.Arguments = b
			}
		}
		hc.Interval = h.duration("interval", 0)
		hc.Timeout = h.duration("timeout", 0)
		if n, ok := h.integer("failures"); ok {
			if n < 1 || n > 1000 {
				h.errorf("failures", "%d is out of range; use a number of failed checks in a row from 1 to 1000, like 3", n)
			} else {
				hc.Failures = int(n)
			}
		}
		switch {
		case hc.Tool == "" && hc.Resource == "" && !h.has("tool") && !h.has("resource"):
			h.errorHere(`a health check needs tool = "..." (a tool of this server to call) or resource = "..." (a URI to read)`)
		case h.has("tool") && h.has("resource"):
			h.errorHere("a health check has either tool or resource, not both; keep one")
		case h.has("resource") && h.has("arguments"):
			h.errorf("arguments", "arguments are for a tool check; remove them, or check a tool instead of a resource")
		}
		h.finish()
		s.Health = &hc
	}
	if r, ok := t.table("restart"); ok {
		var rp Restart
		if on, ok := r.boolean("enabled"); ok {
			rp.Disabled = !on
		}
		rp.InitialDelay = r.duration("initial_backoff", 0)
		rp.MaxDelay = r.duration("max_backoff", 0)
		rp.FailureWindow = r.duration("failure_window", 0)
		rp.FailedRetry = r.duration("failed_retry", 0)
		if n, ok := r.integer("max_failures"); ok {
			if n < 1 || n > 1000 {
				r.errorf("max_failures", "%d is out of range; use a count from 1 to 1000, like 5", n)
			} else {
				rp.MaxFailures = int(n)
			}
		}
		if rp.InitialDelay > 0 && rp.MaxDelay > 0 && rp.InitialDelay > rp.MaxDelay {
			r.errorf("initial_backoff", "initial_backoff (%s) is larger than max_backoff (%s); lower it or raise max_backoff", rp.InitialDelay, rp.MaxDelay)
		}
		r.finish()
		s.Restart = rp
	}
}
