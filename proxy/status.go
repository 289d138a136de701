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
}

// Status reports every configured server, in config order.
func (s *Server) Status() []ServerStatus {
	out := make([]ServerStatus, 0, len(s.backends))
	for _, b := range s.backends {
		b.mu.Lock()
		st := ServerStatus{Name: b.name, State: b.state.String(), Tools: len(b.lists.tools)}
		if b.err != nil {
			st.Err = b.err.Error()
		}
		st.Restarts = b.restarts
		if b.up != nil && b.state == stateUp {
			st.PID = b.up.PID()
			st.Uptime = time.Since(b.since)
		}
		b.mu.Unlock()
		out = append(out, st)
	}
	return out
}
