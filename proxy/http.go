package proxy

import (
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// HTTPOptions configures the streamable HTTP endpoint.
type HTTPOptions struct {
	// AllowedHosts are Host header names accepted besides localhost,
	// 127.0.0.1 and ::1 (any port). If empty, only those.
	AllowedHosts []string
	// AllowedOrigins are Origin header values (scheme://host[:port]) accepted
	// besides loopback origins. If empty, only loopback origins; requests
	// without an Origin header (non-browser clients) are always accepted.
	AllowedOrigins []string
	// SessionTimeout closes sessions idle for that long. If zero, 30 minutes.
	SessionTimeout time.Duration
	// MaxRequestBytes bounds one request body. If zero, Options.MaxMessageBytes.
	MaxRequestBytes int64
}

// HTTPHandler returns the streamable HTTP MCP endpoint (mount it at /mcp), with
// sessions, and Host and Origin checks against DNS rebinding: a browser page on
// another origin cannot drive the proxy.
func (s *Server) HTTPHandler(opts HTTPOptions) http.Handler {
	if opts.SessionTimeout == 0 {
		opts.SessionTimeout = 30 * time.Minute
	}
	if opts.MaxRequestBytes == 0 {
		opts.MaxRequestBytes = int64(s.opts.MaxMessageBytes)
	}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.server }, &mcp.StreamableHTTPOptions{
		SessionTimeout:      opts.SessionTimeout,
		MaxRequestBodyBytes: opts.MaxRequestBytes,
		Logger:              slog.New(quietHandler{s.log.Handler(), slog.LevelWarn}).With("component", "http"),
		// The checks below replace the SDK's loopback-only Host check, so that
		// AllowedHosts can extend it.
		DisableLocalhostProtection: true,
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !hostAllowed(r.Host, opts.AllowedHosts) {
			http.Error(w, "manifold: Host "+r.Host+" is not allowed; add it to http.allowed_hosts in the proxy config", http.StatusForbidden)
			return
		}
		if o := r.Header.Get("Origin"); o != "" && !originAllowed(o, opts.AllowedOrigins) {
			http.Error(w, "manifold: Origin "+o+" is not allowed; add it to http.allowed_origins in the proxy config", http.StatusForbidden)
			return
		}
		if r.Method == http.MethodDelete {
			// The client ends its session: its calls in flight are cancelled
			// upstream (the SDK would wait for them before closing it).
			s.sessionCalls.cancel(r.Header.Get("Mcp-Session-Id"))
		}
		h.ServeHTTP(w, r)
	})
}

func isLoopbackName(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func hostAllowed(hostport string, allowed []string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if isLoopbackName(host) {
		return true
	}
	return slices.ContainsFunc(allowed, func(a string) bool { return strings.EqualFold(a, host) || strings.EqualFold(a, hostport) })
}

func originAllowed(origin string, allowed []string) bool {
	if slices.ContainsFunc(allowed, func(a string) bool { return strings.EqualFold(strings.TrimSuffix(a, "/"), origin) }) {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return false
	}
	return isLoopbackName(u.Hostname())
}
