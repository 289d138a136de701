package session

import (
	"strings"
	"sync"
	"time"
)

// How long a first list waits for servers whose catalog is not known yet
// (the proxy's Options.FirstListWait zero): as long as the client that lists allows
// before it starts its first turn without the proxy, measured over stdio
// with a server whose tools/list was delayed (README, "First run and later
// runs"). A client that gives up drops the whole server, not only the late
// part, so the wait must end inside the client's bound, whatever it costs
// the servers still starting (they join with list_changed).
const (
	// Codex 0.171 starts its first turn about 1 s after it starts an
	// optional server (mcp_optional_startup_grace_ms): 0.8 s was in time,
	// 1.0 s was not. Its wait includes the proxy's own start and initialize.
	firstListWaitCodex = 500 * time.Millisecond
	// Claude Code 2.1.332 -p (MCP_TIMEOUT, 30 s) and opencode 1.18 (about
	// 30 s) offer a server that lists within 25 s; Gemini CLI 0.61 waits
	// 600 s; the MCP Inspector 2.12's CLI gives a request 60 s
	// (inspector-cli; the TypeScript SDK's default), mcporter 0.12's list
	// a server 30 s with its start (MCPORTER_LIST_TIMEOUT). 20 s leaves
	// them a margin.
	firstListWaitPatient = 20 * time.Second
	// Any other client: under the 10 s that older MCP Inspectors and others
	// give a request by default.
	firstListWaitOther = 8 * time.Second
)

// FirstListWait is the bound of a first list's wait for a client of the
// given clientInfo name: set (Options.FirstListWait) if it is not zero.
func FirstListWait(client string, set time.Duration) time.Duration {
	if set > 0 {
		return set
	}
	switch strings.ToLower(client) {
	case "codex-mcp-client", "codex":
		return firstListWaitCodex
	case "claude-code", "gemini-cli-mcp-client", "gemini-cli", "opencode", "inspector-cli", "mcporter":
		return firstListWaitPatient
	}
	return firstListWaitOther
}

// Waits holds, per session, when its first-list wait ends: the wait
// runs from the session's first wait (its initialize), so that the
// initialize and the list that follows share the client's patience.
type Waits struct {
	m sync.Map // session -> time.Time
}

// Left returns how much of the wait d is left to session at now, and
// whether this was the session's first wait (its wait starts now).
func (l *Waits) Left(session any, d time.Duration, now time.Time) (time.Duration, bool) {
	v, loaded := l.m.LoadOrStore(session, now.Add(d))
	return v.(time.Time).Sub(now), !loaded
}

// Forget drops an ended session.
func (l *Waits) Forget(session any) { l.m.Delete(session) }
