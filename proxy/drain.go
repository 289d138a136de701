package proxy

import (
	"context"
	"encoding/json"
	"net/http"
	"time"
)

// This file holds draining (README "Probes and draining"): on SIGTERM,
// `serve --http` calls Drain, waits with WaitIdle for the requests in
// flight, bounded by its grace, and then closes the listener and the
// Server. While draining, /readyz answers 503 so that the load balancer
// sends no more, and /mcp refuses what would start new work here — a new
// session, a 2026-07-28 request, a session's new GET stream — with 503 and
// Retry-After, which a client retries on another replica. A session that
// lives here keeps being served meanwhile: its calls in flight may need its
// answers (elicitation, sampling) to finish. Once Close has begun, no call
// is handed to an upstream.

// Drain makes the proxy refuse new work over HTTP and report not ready;
// what is in flight goes on. It is idempotent.
func (s *Server) Drain() { s.draining.Store(true) }

// Draining reports whether Drain was called.
func (s *Server) Draining() bool { return s.draining.Load() }

// InFlight returns how many HTTP requests to /mcp are being served, GET
// streams left out (they last as long as their session).
func (s *Server) InFlight() int { return int(s.inflight.Load()) }

// Parked returns how many 2026-07-28 calls are parked here, waiting for
// their clients' retries (mrtr.go).
func (s *Server) Parked() int { return s.bridge.count() }

// WaitIdle waits until no HTTP request to /mcp is in flight (GET streams
// left out) and no call is parked here (its retry may still come, through
// another replica: retryrelay.go), or ctx ends, and returns ctx's error
// then.
func (s *Server) WaitIdle(ctx context.Context) error {
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for s.inflight.Load() > 0 || s.bridge.count() > 0 {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
	return nil
}

// refuseDraining answers a request that would start new work while the
// proxy drains, and reports whether it did.
func (m *mcpEndpoint) refuseDraining(w http.ResponseWriter, r *http.Request) bool {
	if !m.s.draining.Load() {
		return false
	}
	if r.Header.Get("Mcp-Session-Id") != "" && r.Method != http.MethodGet {
		return false // a session of this replica: its requests and answers go on
	}
	if r.ContentLength != 0 {
		m.boundUnread(w)
	}
	w.Header().Set("Retry-After", "1")
	w.Header().Set("Connection", "close")
	writeHTTPError(w, http.StatusServiceUnavailable, codeServerError,
		"manifold: this replica is shutting down (draining) and takes no new sessions, streams or 2026-07-28 requests; retry, and the load balancer sends it to another replica", nil)
	return true
}

// stoppingResult is the tool error of a call that reached the proxy after
// Close began.
func stoppingResult() json.RawMessage {
	return toolError("manifold is stopping; this call was not sent to any server, so nothing was executed. Retry: another replica (or this one, restarted) will serve it")
}
