package proxy

import "time"

// ServerStatus is what the proxy knows of one upstream, for `manifold tools`,
// status reports and tests.
type ServerStatus struct {
	Name  string
	State string // starting, up, failed, exited or stopped
	PID   int    // 0 when not running or remote
	Err   string // why it failed or exited
	Tools int    // tools in its last listing
	// Restarts counts the times it exited and was restarted.
	Restarts int
	// Uptime is how long it has been up; zero when it is not.
	Uptime time.Duration
	// Required is the server's required setting.
	Required bool
	// Health is "ok", the last health check's failure, or "" when no check
	// has run (or none is configured).
	Health string
}

// Status reports every configured server, in config order, with secrets
// hidden (Options.Redactor).
func (s *Server) Status() []ServerStatus {
	g := s.gen.Load()
	out := make([]ServerStatus, 0, len(g.backends))
	for _, b := range g.backends {
		b.mu.Lock()
		st := ServerStatus{Name: b.name, State: b.state.String(), Tools: len(b.lists.tools)}
		if b.err != nil {
			st.Err = s.opts.Redactor.String(b.err.Error())
		}
		st.Restarts = b.restarts
		st.Required = b.cfg.Required
		if !b.checked.IsZero() {
			st.Health = "ok"
			if b.healthErr != nil {
				st.Health = s.opts.Redactor.String(b.healthErr.Error())
			}
		}
		if b.up != nil && b.state == stateUp {
			st.PID = b.up.PID()
			st.Uptime = time.Since(b.since)
		}
		b.mu.Unlock()
		out = append(out, st)
	}
	return out
}
