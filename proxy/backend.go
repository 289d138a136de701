package proxy

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manifold-mcp/manifold/upstream"
)

// state is a backend's lifecycle state.
type state int

const (
	stateStarting state = iota
	stateUp
	stateFailed // never came up
	stateExited // came up, then its connection ended
	stateStopped
)

func (st state) String() string {
	switch st {
	case stateStarting:
		return "starting"
	case stateUp:
		return "up"
	case stateFailed:
		return "failed"
	case stateExited:
		return "exited"
	case stateStopped:
		return "stopped"
	}
	return "unknown"
}

// listKind names one of the four lists an upstream serves.
type listKind uint8

const (
	kindTools listKind = 1 << iota
	kindPrompts
	kindResources
	kindTemplates
	kindAll = kindTools | kindPrompts | kindResources | kindTemplates
)

// lists is an upstream's last successful listing.
type lists struct {
	tools     []*mcp.Tool
	prompts   []*mcp.Prompt
	resources []*mcp.Resource
	templates []*mcp.ResourceTemplate
}

// backend is one configured upstream and what the proxy knows of it.
type backend struct {
	cfg  ServerConfig
	name string
	log  *slog.Logger

	mu       sync.Mutex
	state    state              // guarded by mu
	up       *upstream.Upstream // guarded by mu; nil unless started
	err      error              // guarded by mu; why it failed or exited
	lists    lists              // guarded by mu
	caps     *mcp.ServerCapabilities
	dirty    listKind                   // guarded by mu; lists to re-fetch
	fetching bool                       // guarded by mu; a refresh loop runs
	busy     map[*mcp.ServerSession]int // guarded by mu; calls in flight per downstream session
	started  chan struct{}              // closed when the initial start attempt ended
}

// enter records a call in flight from ss; the returned func ends it.
func (b *backend) enter(ss *mcp.ServerSession) func() {
	if ss == nil {
		return func() {}
	}
	b.mu.Lock()
	if b.busy == nil {
		b.busy = make(map[*mcp.ServerSession]int)
	}
	b.busy[ss]++
	b.mu.Unlock()
	return func() {
		b.mu.Lock()
		if b.busy[ss]--; b.busy[ss] <= 0 {
			delete(b.busy, ss)
		}
		b.mu.Unlock()
	}
}

// busySessions returns the downstream sessions with calls in flight on b.
func (b *backend) busySessions() []*mcp.ServerSession {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]*mcp.ServerSession, 0, len(b.busy))
	for ss := range b.busy {
		out = append(out, ss)
	}
	return out
}

// snapshot returns the backend's state, connection and error.
func (b *backend) snapshot() (state, *upstream.Upstream, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.state, b.up, b.err
}

func (b *backend) close() error {
	b.mu.Lock()
	up := b.up
	if b.state == stateUp || b.state == stateStarting {
		b.state = stateStopped
	}
	b.mu.Unlock()
	if up == nil {
		return nil
	}
	return up.Close()
}

// unavailable describes, for the model, why the backend cannot serve a call.
func (b *backend) unavailable() string {
	st, _, err := b.snapshot()
	switch st {
	case stateStarting:
		return fmt.Sprintf("upstream %q is still starting; nothing was executed; retry in a few seconds", b.name)
	case stateFailed:
		return fmt.Sprintf("upstream %q failed to start, so its tools are unavailable; nothing was executed (%v). Tell the user to check the server's command in the proxy config and its logs", b.name, err)
	case stateExited:
		return fmt.Sprintf("upstream %q has exited, so its tools are unavailable; nothing was executed (%v)", b.name, err)
	case stateStopped:
		return fmt.Sprintf("upstream %q is stopped; nothing was executed", b.name)
	}
	return fmt.Sprintf("upstream %q is unavailable; nothing was executed", b.name)
}

// startBackend starts one upstream, lists its catalog and watches it.
func (s *Server) startBackend(ctx context.Context, b *backend) error {
	opts := b.cfg.Upstream
	opts.Logger = s.log
	opts.ClientInfo = &mcp.Implementation{Name: "manifold", Version: Version}
	opts.Client, opts.Middleware = s.clientOptions(b)
	if opts.MaxMessageBytes == 0 {
		opts.MaxMessageBytes = s.opts.MaxMessageBytes
	}
	up, err := upstream.Start(ctx, opts)
	if err != nil {
		b.mu.Lock()
		if b.state == stateStarting {
			b.state = stateFailed
		}
		b.err = err
		b.mu.Unlock()
		b.log.Error("server left out: failed to start", "err", err)
		s.rebuild()
		if b.cfg.Required {
			return fmt.Errorf("%w: server %q: %w", ErrRequiredFailed, b.name, err)
		}
		return nil
	}
	b.mu.Lock()
	if b.state == stateStopped { // Close raced with the start
		b.mu.Unlock()
		_ = up.Close()
		return nil
	}
	b.up = up
	if ir := up.InitializeResult(); ir != nil {
		b.caps = ir.Capabilities
	}
	b.mu.Unlock()

	l, err := s.fetchLists(ctx, b, up, kindAll, lists{})
	if err != nil {
		b.log.Warn("listing failed after start; serving what was listed", "err", err)
	}
	b.mu.Lock()
	b.lists = l
	if b.state == stateStarting {
		b.state = stateUp
	}
	b.mu.Unlock()
	b.log.Info("server up", "pid", up.PID(), "tools", len(l.tools), "prompts", len(l.prompts),
		"resources", len(l.resources), "templates", len(l.templates))
	s.rebuild()

	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.watch(b, up)
	}()
	return nil
}

// watch waits for an upstream's connection to end and records why.
func (s *Server) watch(b *backend, up *upstream.Upstream) {
	select {
	case <-up.Done():
	case <-s.closed:
		return
	}
	b.mu.Lock()
	if b.state == stateStopped {
		b.mu.Unlock()
		return
	}
	b.state = stateExited
	b.err = up.Err()
	b.mu.Unlock()
	b.log.Error("server exited; its tools stay listed and calls return an error saying so", "err", up.Err(), "stderr_tail", up.StderrTail())
}

// fetchLists lists the kinds in want from up, draining pagination, and returns
// prev with those kinds replaced.
func (s *Server) fetchLists(ctx context.Context, b *backend, up *upstream.Upstream, want listKind, prev lists) (lists, error) {
	ctx, cancel := context.WithTimeout(ctx, b.cfg.CallTimeout)
	defer cancel()
	cs := up.Session()
	caps := &mcp.ServerCapabilities{}
	if ir := up.InitializeResult(); ir != nil && ir.Capabilities != nil {
		caps = ir.Capabilities
	}
	out := prev
	var firstErr error
	keep := func(err error) {
		if err != nil && firstErr == nil {
			firstErr = err
		}
	}
	if want&kindTools != 0 && caps.Tools != nil {
		out.tools = nil
		for t, err := range cs.Tools(ctx, nil) {
			if err != nil {
				keep(fmt.Errorf("tools/list: %w", err))
				out.tools = prev.tools
				break
			}
			out.tools = append(out.tools, t)
		}
	}
	if want&kindPrompts != 0 && caps.Prompts != nil {
		out.prompts = nil
		for p, err := range cs.Prompts(ctx, nil) {
			if err != nil {
				keep(fmt.Errorf("prompts/list: %w", err))
				out.prompts = prev.prompts
				break
			}
			out.prompts = append(out.prompts, p)
		}
	}
	if want&kindResources != 0 && caps.Resources != nil {
		out.resources = nil
		for r, err := range cs.Resources(ctx, nil) {
			if err != nil {
				keep(fmt.Errorf("resources/list: %w", err))
				out.resources = prev.resources
				break
			}
			out.resources = append(out.resources, r)
		}
	}
	if want&kindTemplates != 0 && caps.Resources != nil {
		out.templates = nil
		for t, err := range cs.ResourceTemplates(ctx, nil) {
			if err != nil {
				keep(fmt.Errorf("resources/templates/list: %w", err))
				out.templates = prev.templates
				break
			}
			out.templates = append(out.templates, t)
		}
	}
	return out, firstErr
}

// requestRefresh marks kinds of b's lists stale and makes sure one refresh loop
// runs for b. Bursts of list_changed coalesce into one listing.
func (s *Server) requestRefresh(b *backend, kinds listKind) {
	b.mu.Lock()
	b.dirty |= kinds
	if b.fetching {
		b.mu.Unlock()
		return
	}
	b.fetching = true
	b.mu.Unlock()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		// A short pause lets a burst of notifications arrive before listing.
		select {
		case <-time.After(20 * time.Millisecond):
		case <-s.closed:
		}
		for {
			b.mu.Lock()
			kinds := b.dirty
			b.dirty = 0
			up, prev, st := b.up, b.lists, b.state
			if kinds == 0 || up == nil || st != stateUp || s.isClosed() {
				b.fetching = false
				b.mu.Unlock()
				return
			}
			b.mu.Unlock()
			l, err := s.fetchLists(context.Background(), b, up, kinds, prev)
			if err != nil {
				b.log.Warn("re-listing after list_changed failed; keeping the previous list", "err", err)
			}
			b.mu.Lock()
			b.lists = l
			b.mu.Unlock()
			s.rebuild()
		}
	}()
}

func (s *Server) isClosed() bool {
	select {
	case <-s.closed:
		return true
	default:
		return false
	}
}

// clientOptions builds the MCP client handlers for one upstream: they close over
// the backend so every notification is attributed to its server.
func (s *Server) clientOptions(b *backend) (*mcp.ClientOptions, []mcp.Middleware) {
	opts := &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			s.requestRefresh(b, kindTools)
		},
		PromptListChangedHandler: func(context.Context, *mcp.PromptListChangedRequest) {
			s.requestRefresh(b, kindPrompts)
		},
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) {
			s.requestRefresh(b, kindResources|kindTemplates)
		},
		ResourceUpdatedHandler: func(ctx context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
			s.resourceUpdated(ctx, b, r.Params.URI)
		},
		ProgressNotificationHandler: func(ctx context.Context, r *mcp.ProgressNotificationClientRequest) {
			s.progress.forward(ctx, r.Params)
		},
	}
	s.relayLogs(opts, b)
	mw := s.relayOptions(opts, b)
	return opts, mw
}
