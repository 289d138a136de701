package streamable

import (
	"net/http"

	"github.com/manifold-mcp/manifold/proxy/era"
	"github.com/manifold-mcp/manifold/proxy/internal/wire"
	"github.com/manifold-mcp/manifold/proxy/serve/frame"
)

// While the proxy drains (the root's drain.go: README "Probes and
// draining"), /mcp refuses what would start new work here — a new session, a
// 2026-07-28 request, a session's new GET stream — with 503 and
// Retry-After, which a client retries on another replica. A session that
// lives here keeps being served, and so is the retry of a 2026-07-28 call
// (a tools/call with a requestState).

// refuseDraining answers a request that would start new work while the
// proxy drains, and reports whether it did.
func (m *mcpEndpoint) refuseDraining(w http.ResponseWriter, r *http.Request) bool {
	if !m.core.Draining() {
		return false
	}
	if r.Header.Get("Mcp-Session-Id") != "" && r.Method != http.MethodGet {
		return false // a session of this replica: its requests and answers go on
	}
	if mayBeRetry(r) {
		return false // its body says (refuseNewWork), and then its state (the root's resumeCall)
	}
	if r.ContentLength != 0 {
		m.boundUnread(w)
	}
	writeDraining(w)
	return true
}

// mayBeRetry reports whether r may be the retry of a 2026-07-28 call: a
// POST without a session whose headers say tools/call at 2026-07-28.
func mayBeRetry(r *http.Request) bool {
	return r.Method == http.MethodPost && r.Header.Get("Mcp-Session-Id") == "" &&
		r.Header.Get("Mcp-Method") == "tools/call" && r.Header.Get("Mcp-Protocol-Version") >= era.Version
}

// refuseNewWork answers a request that refuseDraining let through to its
// body (mayBeRetry), while the proxy drains, unless the body is a
// tools/call with a requestState, and reports whether it did.
func (m *mcpEndpoint) refuseNewWork(w http.ResponseWriter, body []byte) bool {
	if !m.core.Draining() {
		return false
	}
	if f := frame.Check(body); f.Kind == wire.Request && f.Method == "tools/call" && wire.Member(f.Params, "requestState") != nil {
		return false
	}
	writeDraining(w)
	return true
}

// writeDraining answers with 503: this replica takes no new work.
func writeDraining(w http.ResponseWriter) {
	w.Header().Set("Retry-After", "1")
	w.Header().Set("Connection", "close")
	writeHTTPError(w, http.StatusServiceUnavailable, codeServerError, drainingMessage, nil)
}

const drainingMessage = "manifold: this replica is shutting down (draining) and takes no new sessions, streams or 2026-07-28 requests; retry, and the load balancer sends it to another replica"
