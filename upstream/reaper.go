package upstream

import (
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"sync"

	"github.com/manifold-mcp/manifold/internal/reaper"
	"github.com/manifold-mcp/manifold/internal/spawn"
)

// ReaperArg is the first argument that makes the proxy's binary run as the
// reaper (package internal/reaper, which a binary that uses Reaper links
// in through this package) instead of its normal self.
const ReaperArg = reaper.Arg

// Reaper guarantees that the process groups of the children outlive the
// proxy by no more than a moment, even when the proxy is killed with SIGKILL
// and a child's own children (npx's node, a shell's jobs) ignore the end of
// their input. Pdeathsig kills only the direct child; the reaper is one
// helper process (the proxy's binary re-executed with ReaperArg) that is told
// every child's process group and, when the proxy's end of its stdin closes
// (the proxy exited, however), sends SIGTERM and then SIGKILL to the groups
// still registered. One reaper serves every upstream.
type Reaper struct {
	path string

	mu     sync.Mutex
	cmd    *exec.Cmd      // guarded by mu; nil until the first child
	w      io.WriteCloser // guarded by mu
	err    error          // guarded by mu; why the reaper could not start
	closed bool           // guarded by mu
}

// NewReaper returns a reaper that runs the executable at path, a binary
// that links this package (and so runs as the reaper when its first
// argument is ReaperArg). It starts on first use, or at Start.
func NewReaper(path string) *Reaper { return &Reaper{path: path} }

// Start starts the reaper process now, if it has not started, instead of at
// the first child: its own start (a run of the proxy's binary, which
// initialises every package) then overlaps the proxy's instead of the first
// servers'. Calling it changes nothing else. It returns why the reaper could
// not start; the first child's start logs that too.
func (r *Reaper) Start() error {
	return r.locked(func() error { return nil })
}

// locked runs f with mu held, once the reaper has started; an error if it
// is closed or could not start. A nil Reaper does nothing.
func (r *Reaper) locked(f func() error) error {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return fmt.Errorf("reaper closed")
	}
	if err := r.start(); err != nil {
		return err
	}
	return f()
}

// start starts the reaper process if it has not started (or failed to).
// Called with mu held.
func (r *Reaper) start() error {
	if r.cmd == nil && r.err == nil {
		// The one `manifold serve` started while it initialised (package
		// internal/spawn), if any; else one starts now.
		if cmd, w := spawn.TakeReaper(r.path); cmd != nil {
			r.cmd, r.w = cmd, w
			return nil
		}
		cmd, w, err := spawn.Reaper(r.path)
		if err != nil {
			r.err = fmt.Errorf("start the reaper %s: %w", r.path, err)
			return r.err
		}
		r.cmd, r.w = cmd, w
	}
	return r.err
}

// send writes one line to the reaper, starting it if needed.
func (r *Reaper) send(line string) error {
	return r.locked(func() error {
		_, err := io.WriteString(r.w, line+"\n")
		return err
	})
}

// register adds a child's process group.
func (r *Reaper) register(pgid int) error { return r.send("+" + strconv.Itoa(pgid)) }

// unregister removes a process group that is gone.
func (r *Reaper) unregister(pgid int) { _ = r.send("-" + strconv.Itoa(pgid)) }

// Close tells the reaper the proxy is done and waits for it: it kills the
// groups still registered (none, after a clean stop) and exits. It is
// idempotent.
func (r *Reaper) Close() error {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	cmd, w := r.cmd, r.w
	r.mu.Unlock()
	if cmd == nil {
		return nil
	}
	_ = w.Close()
	return cmd.Wait()
}
