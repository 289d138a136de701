package proxy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/manifold-mcp/manifold/upstream/supervise"
)

// HealthCheck checks a server through the real path: a tool call (or a
// resource read) whose answer must contain an expected text
// (supervise.HealthCheck).
type HealthCheck = supervise.HealthCheck

// HealthHandler serves /healthz (the proxy process is alive), /readyz (the
// proxy is not draining (drain.go) and every required server is up and
// passes its health check: 200, else 503) and
// /status (every server's status as JSON) and /status/clients (the connected
// clients with the catalog mode each got, and the catalog's size per mode).
func (s *Server) HealthHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if s.run.draining.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintln(w, "draining: this replica is shutting down")
			return
		}
		var notReady []string
		for _, st := range s.Status() {
			if st.Required && (st.State != "up" || st.Health != "" && st.Health != "ok") {
				notReady = append(notReady, fmt.Sprintf("%s: %s %s", st.Name, st.State, st.Err+st.Health))
			}
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if len(notReady) > 0 {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintln(w, strings.Join(notReady, "\n"))
			return
		}
		fmt.Fprintln(w, "ready")
	})
	mux.HandleFunc("GET /status/clients", func(w http.ResponseWriter, _ *http.Request) {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetIndent("", "  ")
		_ = enc.Encode(struct {
			Clients []ClientStatus `json:"clients"`
			Catalog CatalogSize    `json:"catalog"`
		}{Clients: nonNil(s.Clients()), Catalog: s.CatalogSize()})
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(buf.Bytes())
	})
	mux.HandleFunc("GET /status", func(w http.ResponseWriter, _ *http.Request) {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetIndent("", "  ")
		_ = enc.Encode(s.Status())
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(buf.Bytes())
	})
	return mux
}
