package upstream

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/manifold-mcp/manifold/internal/spawn/procgroup"
)

// describeExit says how a process ended.
func describeExit(ps *os.ProcessState) string {
	if ps == nil {
		return "exited"
	}
	if code := ps.ExitCode(); code >= 0 {
		return fmt.Sprintf("exited with status %d", code)
	}
	return fmt.Sprintf("was killed (%v)", ps)
}

// abort stops a child whose startup failed, or was cancelled, and waits
// until it is reaped. It runs the whole stop sequence, never a bare SIGKILL:
// a server interrupted while it installs itself (npx filling its cache) must
// get the chance to leave its files whole. A child that already exited keeps
// its own exit status.
func (c *child) abort() {
	// Nobody may read the SDK's side any more (a failed probe): a line on
	// its way there must not hold up the reader of stdout.
	c.sdkR.CloseWithError(ErrClosed)
	c.stop()
	<-c.u.done
}

// stop asks the monitor to run the stop sequence.
func (c *child) stop() {
	c.stopOnce.Do(func() {
		c.closing.Store(true)
		close(c.stopReq)
	})
}

// wait reaps the leader. Where the exit can be observed without reaping, the
// rest of the group is killed while the leader's pid still holds the group id.
func (c *child) wait() {
	defer close(c.exited)
	defer c.reaper.unregister(c.pid) // the group was killed and the leader reaped
	if procgroup.WaitExited(c.pid) {
		c.graceGroup()
		c.procMu.Lock()
		defer c.procMu.Unlock()
		procgroup.Signal(c.pid, syscall.SIGKILL)
		_ = c.cmd.Wait()
		c.reaped = true
		return
	}
	_ = c.cmd.Wait()
	c.procMu.Lock()
	defer c.procMu.Unlock()
	procgroup.Signal(c.pid, syscall.SIGKILL)
	c.reaped = true
}

// graceGroup runs the end of the stop sequence for what the leader left in
// its group when it exited (npx exits on SIGTERM before the node process it
// started has flushed): SIGTERM, then up to grace for them to exit, before
// wait's SIGKILL. It is called before the leader is reaped, while its pid
// still holds the group id.
func (c *child) graceGroup() {
	if !procgroup.HasOthers(c.pid, c.pid) {
		return
	}
	procgroup.Signal(c.pid, syscall.SIGTERM)
	deadline := time.Now().Add(c.grace)
	for procgroup.HasOthers(c.pid, c.pid) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
}

// signal sends sig to the child's process group unless it has been reaped.
func (c *child) signal(sig syscall.Signal) {
	c.procMu.Lock()
	defer c.procMu.Unlock()
	if !c.reaped {
		c.signalled.Store(true)
		procgroup.Signal(c.pid, sig)
	}
}

// waitExit waits up to d for the leader to be reaped and reports whether it was.
func (c *child) waitExit(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-c.exited:
		return true
	case <-t.C:
		return false
	}
}

// stopProcess is the stop sequence: close stdin, wait stdinGrace, SIGTERM
// the group, wait grace, SIGKILL the group, and wait until the leader is
// reaped. It is the only way a child is stopped.
func (c *child) stopProcess() {
	c.closeStdin()
	stdinGrace, grace := c.stopGraces()
	if c.installing() {
		// No signal while npx may be writing npm's cache: with its stdin
		// closed, it finishes, starts the server, which reads the end of
		// its input and exits, and exits itself.
		c.log.Info("npx is still installing the server; waiting for it to finish, so that npm's cache is left whole", "folder", c.npxDir, "wait_at_most", npxInstallGrace.String())
		if c.waitInstall(npxInstallGrace) {
			return
		}
		if c.installing() {
			c.log.Warn("npx is still installing the server after "+npxInstallGrace.String()+"; stopping it: npm's cache may be left incomplete, and if the next start fails, delete "+c.npxDir, "folder", c.npxDir)
		}
	}
	for _, step := range []struct {
		wait time.Duration
		sig  syscall.Signal
	}{{stdinGrace, syscall.SIGTERM}, {grace, syscall.SIGKILL}} {
		if c.waitExit(step.wait) {
			return
		}
		sig := step.sig
		c.log.Info("server still running; signalling its process group", "signal", sig.String())
		c.signal(sig)
	}
	<-c.exited
}

// startDeadline calls expire once the startup timeout d has passed, not
// counting the time an npx spends installing the server (a first download
// is no hang: killing it leaves npm's cache broken, and the next start
// downloads again): once the install is over, the server has d again to
// answer. In all it waits at most npxStartBound. The returned func stops it.
func (c *child) startDeadline(d time.Duration, expire func()) (stop func()) {
	began := time.Now()
	done := make(chan struct{})
	go func() {
		t := time.NewTimer(d)
		defer t.Stop()
		waited := false // the deadline passed while npx installed
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			switch {
			case time.Since(began) >= npxStartBound:
			case c.installing():
				if !waited {
					waited = true
					c.log.Info("npx is still installing the server; its start waits for the download (startup_timeout counts from its end)", "folder", c.npxDir, "wait_at_most", npxStartBound.String())
				}
				t.Reset(time.Second)
				continue
			case waited:
				waited = false // installed: d from now
				t.Reset(d)
				continue
			}
			expire()
			return
		}
	}()
	return func() { close(done) }
}

// installing reports whether the child is an npx that may still be
// installing its server: it has written nothing to stdout, and its folder in
// npm's cache has no package.json yet (npm writes it last) or is locked
// (npm holds concurrency.lock while it installs).
func (c *child) installing() bool {
	if c.npxDir == "" || c.spoke.Load() {
		return false
	}
	if !npxInstalled(c.npxDir) {
		return true
	}
	_, err := os.Stat(filepath.Join(c.npxDir, "concurrency.lock"))
	return err == nil
}

// waitInstall waits up to d for the child to exit, and reports whether it
// did; it returns false early once the install is over (the server then
// gets the usual stop sequence).
func (c *child) waitInstall(d time.Duration) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if c.waitExit(100 * time.Millisecond) {
			return true
		}
		if !c.installing() {
			return false
		}
	}
	return false
}

// probeStdinGrace bounds the wait between closing the stdin of a probe
// process that failed the probe and its SIGTERM: a legacy server confused by
// server/discover is not trusted to exit by itself, and the fresh process
// waits for it. SIGTERM to SIGKILL keeps the full grace, so that a launcher
// (npx) interrupted while it installs can still leave its cache whole.
const probeStdinGrace = 500 * time.Millisecond

// stopGraces returns the waits of the stop sequence.
func (c *child) stopGraces() (stdinGrace, grace time.Duration) {
	if c.probeStop.Load() {
		return min(c.stdinGrace, probeStdinGrace), c.grace
	}
	return c.stdinGrace, c.grace
}

// monitor owns the process lifecycle and closes u.done. A server whose
// stdout closed, or whose stdin the SDK closed (for instance after failed
// keep-alive pings), is of no more use and is stopped.
func (c *child) monitor() {
	var stopped string // why we stopped a server that did not exit by itself
	select {
	case <-c.exited:
	case <-c.stopReq:
		c.stopProcess()
	case <-c.stdoutDone:
		stopped = "server closed its stdout"
		c.stopProcess()
	case <-c.stdinClosed:
		stopped = "client session closed"
		c.stopProcess()
	}
	<-c.exited

	// The group is dead, so the pipes end as soon as the readers have drained
	// them, unless something that left the group still holds them.
	t := time.NewTimer(c.grace)
	timeout := t.C
	for _, ch := range []chan struct{}{c.stdoutDone, c.stderrDone} {
		select {
		case <-ch:
		case <-timeout:
			c.log.Warn("stdout/stderr still open after the server exited; closing them")
			c.stdoutR.Close()
			c.stderrR.Close()
			<-ch
		}
	}
	t.Stop()
	c.closeStdin()
	c.stdoutR.Close()
	c.stderrR.Close()

	var err error
	ps := c.cmd.ProcessState
	switch {
	case c.closing.Load():
		err = fmt.Errorf("upstream %q: %w", c.name, ErrClosed)
	case stopped != "" && c.signalled.Load(): // it did not exit by itself
		err = fmt.Errorf("upstream %q: %s; server stopped (%s)%s: %w",
			c.name, stopped, describeExit(ps), withTail(c.stderr.String()), ErrClosed)
	default:
		err = fmt.Errorf("upstream %q: server %s%s: %w",
			c.name, describeExit(ps), withTail(c.stderr.String()), ErrClosed)
	}
	if !c.closing.Load() {
		c.log.Warn("server ended", "status", describeExit(ps))
	}
	c.endCalls(err)
	c.u.err = err
	close(c.u.done)
}

// readStderr logs the child's stderr line by line and keeps its tail.
func (c *child) readStderr() {
	defer close(c.stderrDone)
	lr := &lineReader{br: bufio.NewReader(c.stderrR), max: stderrLineMax}
	for {
		line, size, err := lr.next()
		var text string
		switch {
		case line != nil:
			text = string(bytes.TrimRight(line, "\r\n"))
		case size > 0:
			text = string(lr.head) + "…"
		}
		if text != "" {
			c.stderr.add(text)
			c.log.Info("stderr", "line", text)
		}
		if err != nil {
			return
		}
	}
}
