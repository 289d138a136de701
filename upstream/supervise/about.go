package supervise

import (
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manifold-mcp/manifold/upstream"
)

// About is what a server said about itself (in its initialize result)
// and its tools, kept with the listing (and in the cache file) so that a
// server not yet up is described as it was when last up.
type About struct {
	Title, Name  string // serverInfo, sanitised
	Instructions string // sanitised and bounded
	Tools        []*mcp.Tool
	Known        bool // it was up once (in this run or the cached one)
}

// Bounds on what a server said of itself, as kept and cached: its full
// instructions only matter while they fit in the proxy's instructions
// summary (twice proxy.InstructionsBudget).
const (
	maxAboutField        = 256
	MaxAboutInstructions = 4000
)

// newAbout keeps what ir (already sanitised by package upstream) and the
// listing say of a server.
func newAbout(ir *mcp.InitializeResult, tools []*mcp.Tool) About {
	a := About{Tools: tools, Known: true}
	if ir == nil {
		return a
	}
	a.Instructions = bound(ir.Instructions, MaxAboutInstructions)
	if ir.ServerInfo != nil {
		a.Title = bound(ir.ServerInfo.Title, maxAboutField)
		a.Name = bound(ir.ServerInfo.Name, maxAboutField)
	}
	return a
}

// bound cuts s to at most n bytes at a rune boundary.
func bound(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// AboutNow returns what describes b now: its live listing once it was up, else
// the cached one.
func (b *Backend) AboutNow() About {
	b.mu.Lock()
	defer b.mu.Unlock()
	a := b.about
	if len(b.lists.Tools) > 0 {
		a.Tools = b.lists.Tools
		a.Known = true
	}
	return a
}

// Lists returns b's last listing (of a start, a re-listing or the cache).
func (b *Backend) Lists() Lists {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.lists
}

// Listing returns b's lists, with the instructions of the same listing and
// whether b was listed at all (a start, a re-listing or the cache), taken in
// one step: instructions read later could belong to a listing the lists do
// not have yet.
func (b *Backend) Listing() (l Lists, instructions string, listed bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.lists, b.about.Instructions, b.listed
}

// SetLists gives b the lists l (listed: as a whole listing would), as a
// start or a re-listing does; the proxy's tests seed backends with it.
func (b *Backend) SetLists(l Lists, listed bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.lists, b.listed = l, b.listed || listed
}

// SetAbout sets what b's server said of itself (the proxy's tests use it).
func (b *Backend) SetAbout(a About) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.about = a
}

// SetState sets b's state (the proxy's tests use it).
func (b *Backend) SetState(st State) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.state = st
}

// Down reports whether b is not up and lists no tools.
func (b *Backend) Down() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.state != StateUp && len(b.lists.Tools) == 0
}

// Conn returns b's state, its shared connection (nil unless started) and
// the capabilities its server declared at its last start.
func (b *Backend) Conn() (State, *upstream.Upstream, *mcp.ServerCapabilities) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.state, b.up, b.caps
}

// Status is what b's status reports.
type Status struct {
	State    State
	Tools    int
	Err      error // why it failed or exited
	Restarts int
	// Checked is the time of the last health check (zero before one);
	// HealthErr its failure, nil if it passed.
	Checked   time.Time
	HealthErr error
	// Up is b's connection while it is up (nil otherwise), Since when it
	// came up.
	Up    *upstream.Upstream
	Since time.Time
	// Probe is the last start that probed the server's era.
	Probe upstream.EraInfo
}

// Status returns b's status, taken in one step.
func (b *Backend) Status() Status {
	b.mu.Lock()
	defer b.mu.Unlock()
	st := Status{State: b.state, Tools: len(b.lists.Tools), Err: b.err, Restarts: b.restarts,
		Checked: b.checked, HealthErr: b.healthErr, Since: b.since, Probe: b.probe}
	if b.up != nil && b.state == StateUp {
		st.Up = b.up
	}
	return st
}

// Name is b's server's name.
func (b *Backend) Name() string { return b.name }

// Required reports whether a failure of b's first start is final
// (Config.Required).
func (b *Backend) Required() bool { return b.cfg.Required }

// PerSession reports whether b's calls may run in processes of their own
// per session (Config.PerSession, isolation = "session").
func (b *Backend) PerSession() bool { return b.cfg.PerSession }

// PerIdentity reports whether b's callers have connections of their own
// (Config.PerIdentity, credentials = "identity").
func (b *Backend) PerIdentity() bool { return b.cfg.PerIdentity }
