package proxy

import (
	"encoding/json"
	"time"

	"github.com/manifold-mcp/manifold/proxy/pin"
)

// ServerStatus is what the proxy knows of one upstream, for `manifold tools`,
// status reports and tests.
type ServerStatus struct {
	Name  string `json:"name"`
	State string `json:"state"`         // starting, up, failed, exited, stopped or misconfigured (LeftOut)
	PID   int    `json:"pid,omitempty"` // 0 when not running or remote
	Err   string `json:"error,omitempty"`
	Tools int    `json:"tools"` // tools in its last listing
	// Restarts counts the times it exited and was restarted.
	Restarts int `json:"restarts"`
	// Uptime is how long it has been up; zero when it is not. In JSON it is
	// "uptime_seconds", a number of seconds.
	Uptime time.Duration `json:"-"`
	// Required is the server's required setting.
	Required bool `json:"required"`
	// Health is "ok", the last health check's failure, or "" when no check
	// has run (or none is configured).
	Health string `json:"health,omitempty"`
	// Era is "modern" (2026-07-28) or "legacy" (the initialize era) while
	// the server runs; Protocol is the negotiated version; EraSource says
	// whether the era came from a probe at this start, the cache or a pin
	// (upstream.SourceProbe, SourceCache, SourcePin).
	Era       string `json:"era,omitempty"`
	Protocol  string `json:"protocol,omitempty"`
	EraSource string `json:"era_source,omitempty"`
	// BothEras: the server speaks both eras, and is spoken to in the era of
	// the client its process serves (stdio: the client's; a session's own
	// process: the session's; a shared HTTP process: 2026-07-28).
	BothEras bool `json:"both_eras,omitempty"`
	// Probe says what the last probe of the server saw and ProbeMS what it
	// cost, in milliseconds; the probe is paid once, so these stay after
	// later starts are served from the cache. Empty without a probe.
	Probe   string `json:"probe,omitempty"`
	ProbeMS *int64 `json:"probe_ms,omitempty"`
	// Pin is the server's pin mode ("quarantine", "warn"; empty when off)
	// and Review its definitions that await a person's review (pinned.go).
	Pin    string      `json:"pin_mode,omitempty"`
	Review []PinReview `json:"review,omitempty"`
}

// statusJSON is ServerStatus on the wire (GET /status, status --json, the
// status file): snake_case names and the uptime in seconds.
type statusJSON struct {
	serverStatusFields
	UptimeSeconds float64 `json:"uptime_seconds"`
}

type serverStatusFields ServerStatus

// MarshalJSON writes st with its uptime in seconds.
func (st ServerStatus) MarshalJSON() ([]byte, error) {
	return json.Marshal(statusJSON{serverStatusFields(st), st.Uptime.Round(time.Millisecond).Seconds()})
}

// UnmarshalJSON reads what MarshalJSON wrote.
func (st *ServerStatus) UnmarshalJSON(b []byte) error {
	var v statusJSON
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*st = ServerStatus(v.serverStatusFields)
	st.Uptime = time.Duration(v.UptimeSeconds * float64(time.Second))
	return nil
}

// Status reports every configured server, in config order, with secrets
// hidden (Options.Redactor).
func (s *Server) Status() []ServerStatus {
	g := s.gen.Load()
	c := s.catalog.Load()
	out := make([]ServerStatus, 0, len(g.backends))
	for _, b := range g.backends {
		st := ServerStatus{Name: b.name, Pin: string(g.pin[b.name])}
		for _, r := range c.PinReviews(b.name) {
			r.Diff = s.opts.Redactor.String(r.Diff)
			findings := make([]string, len(r.Findings))
			for i, f := range r.Findings {
				findings[i] = s.opts.Redactor.String(f)
			}
			r.Findings = findings
			// Masked when the catalog was built (pinDefs); again here in
			// case a reload taught the redactor a secret since.
			if d := s.opts.Redactor.JSON([]byte(r.Definition)); string(d) != r.Definition {
				c, err := pin.Canonical(d)
				if err != nil {
					c = "{}"
				}
				r.Definition, r.Masked = c, true
			}
			st.Review = append(st.Review, r)
		}
		bs := b.Status()
		st.State, st.Tools = bs.State.String(), bs.Tools
		if bs.Err != nil {
			st.Err = s.opts.Redactor.String(bs.Err.Error())
		}
		st.Restarts = bs.Restarts
		st.Required = b.Required()
		if !bs.Checked.IsZero() {
			st.Health = "ok"
			if bs.HealthErr != nil {
				st.Health = s.opts.Redactor.String(bs.HealthErr.Error())
			}
		}
		if bs.Up != nil {
			st.PID = bs.Up.PID()
			st.Uptime = time.Since(bs.Since)
			e := bs.Up.Era()
			st.Era, st.Protocol, st.EraSource, st.BothEras = "legacy", e.Version, e.Source, e.Dual
			if e.Modern {
				st.Era = "modern"
			}
		}
		if bs.Probe.Source != "" {
			st.Probe = s.opts.Redactor.String(bs.Probe.Probe)
			ms := bs.Probe.ProbeCost.Milliseconds()
			st.ProbeMS = &ms
		}
		out = append(out, st)
	}
	if l := s.builder.leftOut.Load(); l != nil {
		for _, lo := range *l {
			out = append(out, ServerStatus{Name: lo.Name, State: StateMisconfigured, Err: s.opts.Redactor.String(lo.Err)})
		}
	}
	return out
}

// StateMisconfigured is the state of a server left out (Options.LeftOut).
const StateMisconfigured = "misconfigured"

// LeftOut is a configured server that the proxy does not run: Err says
// why and what to do.
type LeftOut struct {
	Name string
	Err  string
}

// SetLeftOut replaces the servers left out (Options.LeftOut), as a reload
// finds them.
func (s *Server) SetLeftOut(l []LeftOut) {
	s.builder.leftOut.Store(&l)
}
