package proxy

import (
	"context"
	"encoding/json"
	"github.com/manifold-mcp/manifold/proxy/internal/wire"
	"time"
)

// This file holds draining (README "Probes and draining"): on SIGTERM,
// `serve --http` calls Drain, waits with WaitIdle for the requests in
// flight, bounded by its grace, and then closes the listener and the
// Server. While draining, /readyz answers 503 so that the load balancer
// sends no more, and /mcp refuses (proxy/serve/streamable drain.go) what would start new work here — a new
// session, a 2026-07-28 request, a session's new GET stream — with 503 and
// Retry-After, which a client retries on another replica. A session that
// lives here keeps being served meanwhile: its calls in flight may need its
// answers (elicitation, sampling) to finish; so is the retry of a
// 2026-07-28 call (a tools/call with a requestState), which carries the
// client's answers to a call parked here (or forwarded to the replica that
// holds it, or to the server that asked): refused, the call would be lost
// to a client or load balancer that does not retry a 503. Once Close has
// begun, no call is handed to an upstream.

// Drain makes the proxy refuse new work over HTTP and report not ready;
// what is in flight goes on. It is idempotent.
func (s *Server) Drain() { s.run.draining.Store(true) }

// Draining reports whether Drain was called.
func (s *Server) Draining() bool { return s.run.draining.Load() }

// InFlight returns how many HTTP requests to /mcp are being served, GET
// streams left out (they last as long as their session).
func (s *Server) InFlight() int { return int(s.run.inflight.Load()) }

// Parked returns how many 2026-07-28 calls are parked here, waiting for
// their clients' retries (proxy/bridge).
func (s *Server) Parked() int { return s.bridge.Count() }

// WaitIdle waits until no HTTP request to /mcp is in flight (GET streams
// left out) and no call is parked here (its retry may still come, through
// another replica: proxy/bridge), or ctx ends, and returns ctx's error
// then.
func (s *Server) WaitIdle(ctx context.Context) error {
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for s.run.inflight.Load() > 0 || s.bridge.Count() > 0 {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
	return nil
}

// stoppingResult is the tool error of a call that reached the proxy after
// Close began.
func stoppingResult() json.RawMessage {
	return wire.ToolError("manifold is stopping; this call was not sent to any server, so nothing was executed. Retry: another replica (or this one, restarted) will serve it")
}
