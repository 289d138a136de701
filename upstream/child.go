package upstream

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manifold-mcp/manifold/internal/jsonscan"
	"github.com/manifold-mcp/manifold/internal/spawn"
	"github.com/manifold-mcp/manifold/internal/spawn/procgroup"
)

// child is a stdio server process and the line mux on its pipes.
//
// Goroutines, all owned by the child and all ended by the time u.done closes
// (except readStdout's final pipe close, which never blocks):
//   - readStdout: the only reader of the child's stdout; diverts responses to
//     raw calls, drops noise, hands the rest to the SDK through an io.Pipe;
//   - readStderr: logs stderr lines and keeps their tail;
//   - wait: waits for the leader to exit, kills the rest of its group, reaps it;
//   - monitor: runs the stop sequence when asked (or when stdout or the SDK
//     session closes), then records why the connection ended and closes u.done.
type child struct {
	u     *Upstream
	name  string
	log   *slog.Logger
	grace time.Duration // between SIGTERM and SIGKILL
	// stdinGrace is the wait between closing stdin and SIGTERM.
	stdinGrace time.Duration
	max        int

	cmd *exec.Cmd
	pid int
	// npxDir is the folder of npm's cache that an npx command installs its
	// server into ("" for other commands): see installing.
	npxDir string

	stdin       *os.File
	stdinOnce   sync.Once
	stdinClosed chan struct{} // closed with stdin, by us or by the SDK
	stdoutR     *os.File
	stderrR     *os.File

	wmu      sync.Mutex // serialises frames written to stdin
	queue    [][]byte   // guarded by wmu; what the pipe did not take yet, in order
	queued   int        // guarded by wmu; the bytes in queue
	flushing bool       // guarded by wmu; flush owns the queue
	werr     error      // guarded by wmu; the error that ended writing

	smu  sync.Mutex
	sent map[string]struct{} // guarded by smu; ids of the SDK's requests not yet answered

	nextID  atomic.Uint64
	pmu     sync.Mutex
	pending map[uint64]func(reply) // guarded by pmu; raw calls waiting for a response
	ended   error                  // guarded by pmu; non-nil once no response can come

	stderr tail

	sdkR *io.PipeReader // the SDK's side of stdout
	sdkW *io.PipeWriter // readStdout's side; also written by replayDiscover

	// replay, when set, is the probe's DiscoverResult: the SDK's own
	// server/discover is answered with it instead of asking the server again.
	replay atomic.Pointer[json.RawMessage]
	// replayInit, when set, is the InitializeResult of the initialize sent
	// first on the raw path (initializeFirst): the SDK's own initialize is
	// answered with it, so that the server sees one initialize.
	replayInit atomic.Pointer[json.RawMessage]
	// meta, when set (a modern server), is added to the _meta of every raw
	// request where absent.
	meta atomic.Pointer[[]metaMember]
	// probeStop shortens the stop sequence of a probe process that failed
	// the probe (see stopGraces).
	probeStop atomic.Bool
	// probing is set while the probe waits for its answer and the SDK does
	// not read: messages for the SDK are dropped, not queued.
	probing atomic.Bool
	// noisy is set when the server wrote a line that is not JSON-RPC while
	// it was probed.
	noisy atomic.Bool
	// spoke is set once the server wrote anything to stdout: a launcher
	// (npx) that was installing it is done by then.
	spoke atomic.Bool

	progress func(*mcp.ProgressNotificationParams) // Options.Progress; nil: the SDK handles progress
	// Options.Log; nil: the SDK handles log messages.
	logMsg func(*mcp.LoggingMessageParams) //lint:ignore SA1019 logging is part of the protocol versions the proxy serves
	reaper *Reaper                         // Options.Reaper; may be nil

	procMu sync.Mutex
	reaped bool // guarded by procMu; once true, the pid must not be signalled

	closing    atomic.Bool   // Close was called, or startup failed
	signalled  atomic.Bool   // we sent the group a signal
	stopReq    chan struct{} // closed by stop
	stopOnce   sync.Once
	exited     chan struct{} // closed by wait once the leader is reaped
	stdoutDone chan struct{} // closed by readStdout
	stderrDone chan struct{} // closed by readStderr
}

// reply is the outcome of one raw call.
type reply struct {
	result json.RawMessage
	err    error
}

const (
	stdoutBufSize = 64 << 10
	stderrLineMax = 4 << 10
	noiseLogBytes = 200
)

// spawnChild starts opts.Command with its pipes and the goroutines that own
// them, and sets u.child. It does not speak MCP yet.
func (u *Upstream) spawnChild(opts Options) (*child, error) {
	// A server `manifold serve` started while it initialised (package
	// internal/spawn) is taken if it is this one; else it starts now.
	p := spawn.Take(opts.Command, opts.Args, opts.Env, opts.Dir)
	if p == nil {
		var err error
		if p, err = spawn.Server(opts.Command, opts.Args, opts.Env, opts.Dir); err != nil {
			if errors.Is(err, exec.ErrNotFound) {
				return nil, fmt.Errorf("upstream %q: executable %q not found in PATH; install it or set command to its full path: %w", u.name, opts.Command, err)
			}
			return nil, fmt.Errorf("upstream %q: cannot start %q: %w", u.name, opts.Command, err)
		}
	}
	cmd := p.Cmd
	if err := opts.Reaper.register(cmd.Process.Pid); err != nil {
		u.log.Warn("the reaper is unavailable; the server's own children may outlive a killed proxy", "err", err)
	}
	c := &child{
		reaper:      opts.Reaper,
		u:           u,
		name:        u.name,
		log:         u.log,
		grace:       u.grace,
		stdinGrace:  u.stdinGr,
		max:         u.maxMsg,
		cmd:         cmd,
		pid:         cmd.Process.Pid,
		npxDir:      npxInstallDir(opts.Command, opts.Args, opts.Env),
		stdin:       p.Stdin,
		stdoutR:     p.Stdout,
		stderrR:     p.Stderr,
		pending:     make(map[uint64]func(reply)),
		progress:    opts.Progress,
		logMsg:      opts.Log,
		stopReq:     make(chan struct{}),
		stdinClosed: make(chan struct{}),
		exited:      make(chan struct{}),
		stdoutDone:  make(chan struct{}),
		stderrDone:  make(chan struct{}),
	}
	u.child = c
	c.sdkR, c.sdkW = io.Pipe()
	go c.readStdout(c.sdkW)
	go c.readStderr()
	go c.wait()
	go c.monitor()
	return c, nil
}

// connectChild connects the SDK client to the spawned child c at version
// (initialize, or server/discover for ModernVersion). On failure the process
// group has been killed and reaped before it returns.
func (u *Upstream) connectChild(ctx context.Context, c *child, opts Options, version string) error {
	startCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer c.startDeadline(opts.StartupTimeout, cancel)()
	transport := &mcp.IOTransport{
		Reader:        c.sdkR,
		Writer:        stdinWriter{c},
		MaxLineLength: c.max + 64, // readStdout enforces the limit
	}
	cs, err := u.newClient(opts).Connect(startCtx, repairTransport{transport, u}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err == nil {
		u.session = cs
		return nil
	}
	c.abort()
	return u.startError(ctx, startCtx, c, opts, err)
}

// startError says why the start of c, which has been aborted, failed with
// err: ctx is the start's, startCtx the one its startup timeout cancels.
func (u *Upstream) startError(ctx, startCtx context.Context, c *child, opts Options, err error) error {
	ps := c.cmd.ProcessState
	what := "initialize failed"
	switch {
	case ctx.Err() != nil:
		what = "startup cancelled"
	case startCtx.Err() != nil:
		what = fmt.Sprintf("did not complete initialize within %v", opts.StartupTimeout)
	case ps != nil && (ps.ExitCode() >= 0 || !c.signalled.Load()):
		what = describeExit(ps) + " during startup"
	}
	tail := c.stderr.String()
	return fmt.Errorf("upstream %q: %s%s%s: %w", u.name, what, withTail(tail), npxCacheHint(c.npxDir, opts.Command, tail), err)
}

// npxCacheRE finds the folder of one npx install in npm's or node's error.
var npxCacheRE = regexp.MustCompile(`(/[^\s'"]*?/_npx/[0-9a-f]+)/`)

// npxCacheHint says what to delete when a server failed because npm's npx
// cache holds a half-written install (an earlier first download was
// interrupted), which npx then reuses, so that every start fails the same
// way until the folder is deleted. It knows both forms: the install has a
// package.json but misses packages (node: "Cannot find package 'zod'"), or
// has a node_modules and no package.json (npm, exit 254: "npm error enoent
// Could not read package.json"). dir is the install's folder as Manifold
// computes it (npxInstallDir; "" if unknown): the folder named in the error
// wins. It is empty for other failures.
func npxCacheHint(dir, command, stderr string) string {
	noPkgJSON := strings.Contains(stderr, "Could not read package.json")
	if !noPkgJSON && !strings.Contains(stderr, "Cannot find package") && !strings.Contains(stderr, "Cannot find module") &&
		!strings.Contains(stderr, "ERR_MODULE_NOT_FOUND") {
		return ""
	}
	if m := npxCacheRE.FindStringSubmatch(stderr); m != nil {
		dir = m[1]
	} else if noPkgJSON && dir == "" {
		return "" // not npx's cache (npm run in a project of the user's)
	}
	what := "is incomplete (an earlier download was interrupted)"
	if noPkgJSON {
		what = "has a node_modules but no package.json (an earlier download was interrupted)"
	}
	if dir != "" {
		return fmt.Sprintf("; npx's cached install %s %s: delete it (rm -rf %s) and start again", dir, what, dir)
	}
	if filepath.Base(command) == "npx" {
		return "; npx's cache may hold an incomplete install (an earlier download was interrupted): delete ~/.npm/_npx (rm -rf ~/.npm/_npx) and start again"
	}
	return ""
}

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

// probeID is the raw-path id of the server/discover probe ("mf.0"); raw
// calls count from 1 (the probe's ping takes the first of them).
const probeID = 0

// pingGrace is how long the probe still waits for the answer to
// server/discover once the ping sent right behind it has been answered in
// the initialize era's way: a server reads its requests in order, so an
// answer to server/discover that has not come by then will not come (the
// server ignores methods it does not know). It is what the start of such a
// server costs, so it is kept far below the 15 ms a person would notice;
// a server that answers server/discover after all is then spoken to in the
// initialize era, which it speaks too (it answered the ping that way).
const pingGrace = 10 * time.Millisecond

// errProbeIgnored says that the server answered the probe's ping in the
// initialize era's way but not server/discover.
var errProbeIgnored = errors.New("server/discover ignored")

// probeWait is what probe saw.
type probeWait struct {
	result json.RawMessage
	// err is the error answer to server/discover (a *jsonrpc.Error), an
	// error wrapping ErrClosed if the server exited, errProbeIgnored,
	// errProbeTimeout or ctx's error.
	err error
	// ready is when the server's first answer came; zero if none did.
	ready time.Time
	// late receives the answer to server/discover if it comes after probe
	// returned errProbeIgnored or errProbeTimeout: it is never handed to
	// the SDK, and a start that goes on in the initialize era may still
	// learn from it.
	late <-chan reply
}

// probe sends server/discover with meta on the raw path and, right behind
// it, a ping, and waits up to timeout for an answer that decides: the
// answer to server/discover, or the answer to the ping (a result, or
// -32022, the answer of a server that does not speak 2026-07-28) followed by
// pingGrace without one to server/discover. The ping is the one request
// the initialize era allows before initialize, and carries the 2026-07-28
// _meta, so that a server of that era refuses it (-32601: it removed ping)
// and is waited for. Both go out at once: a server still starting (npx
// installing it) reads them when it is ready.
func (c *child) probe(ctx context.Context, meta []metaMember, timeout time.Duration) probeWait {
	disc := make(chan reply, 1)
	ping := make(chan reply, 1)
	pingID := c.nextID.Add(1)
	c.pmu.Lock()
	if err := c.ended; err != nil {
		c.pmu.Unlock()
		return probeWait{err: err}
	}
	c.pending[probeID] = func(r reply) { disc <- r }
	c.pending[pingID] = func(r reply) { ping <- r }
	c.pmu.Unlock()
	frame := []byte(`{"jsonrpc":"2.0","id":"mf.0","method":"server/discover","params":{"_meta":{`)
	frame = appendMeta(frame, meta)
	frame = append(frame[:len(frame)-1], "}}}\n"...)
	frame = append(frame, `{"jsonrpc":"2.0","id":"mf.`...)
	frame = strconv.AppendUint(frame, pingID, 10)
	frame = append(frame, `","method":"ping","params":{"_meta":{`...)
	frame = appendMeta(frame, meta)
	frame = append(frame[:len(frame)-1], "}}}\n"...)
	if _, err := c.write(frame); err != nil {
		c.forget(probeID)
		c.forget(pingID)
		return probeWait{err: fmt.Errorf("upstream %q: sending server/discover: %v: %w", c.name, err, ErrClosed)}
	}
	var w probeWait
	t := time.NewTimer(timeout)
	defer t.Stop()
	var grace <-chan time.Time
	for {
		select {
		case r := <-disc:
			c.forget(pingID)
			if w.ready.IsZero() {
				w.ready = time.Now()
			}
			w.result, w.err = r.result, r.err
			return w
		case r := <-ping:
			if w.ready.IsZero() {
				w.ready = time.Now()
			}
			var we *jsonrpc.Error
			if r.err == nil || errors.As(r.err, &we) && we.Code == mcp.CodeUnsupportedProtocolVersion {
				g := time.NewTimer(pingGrace)
				defer g.Stop()
				grace = g.C
			}
			// Another error: a server of 2026-07-28 refusing ping (its
			// answer to server/discover follows), or one that exited
			// (which server/discover's answer says too).
		case <-grace:
			w.err, w.late = errProbeIgnored, disc
			return w
		case <-t.C:
			c.forget(pingID)
			w.err, w.late = errProbeTimeout, disc
			return w
		case <-ctx.Done():
			c.forget(probeID)
			c.forget(pingID)
			w.err = ctx.Err()
			return w
		}
	}
}

// initialize sends initialize with params (a JSON object) on the raw path
// and waits for its answer until ctx ends: the result, a *jsonrpc.Error
// (refused), or an error wrapping ErrClosed if the server exited. Messages
// the server sends before it answers are dropped (c.probing is set).
func (c *child) initialize(ctx context.Context, params []byte) (json.RawMessage, error) {
	ch := make(chan reply, 1)
	id := c.nextID.Add(1)
	c.pmu.Lock()
	if err := c.ended; err != nil {
		c.pmu.Unlock()
		return nil, err
	}
	c.pending[id] = func(r reply) { ch <- r }
	c.pmu.Unlock()
	frame := []byte(`{"jsonrpc":"2.0","id":"mf.`)
	frame = strconv.AppendUint(frame, id, 10)
	frame = append(frame, `","method":"initialize","params":`...)
	frame = append(frame, params...)
	frame = append(frame, "}\n"...)
	if _, err := c.write(frame); err != nil {
		c.forget(id)
		return nil, fmt.Errorf("upstream %q: sending initialize: %v: %w", c.name, err, ErrClosed)
	}
	select {
	case r := <-ch:
		return r.result, r.err
	case <-ctx.Done():
		c.forget(id)
		return nil, ctx.Err()
	}
}

// replayDiscover answers the SDK's server/discover request frame with the
// probe's result, once, and its initialize request frame with the result of
// initializeFirst's, once, and reports whether it did.
func (c *child) replayDiscover(frame []byte) bool {
	return c.replayOnce(frame, &c.replay, `"server/discover"`) || c.replayOnce(frame, &c.replayInit, `"initialize"`)
}

// replayOnce answers frame, a request of method (quoted), with the result in
// slot, and empties the slot; it reports whether it did.
func (c *child) replayOnce(frame []byte, slot *atomic.Pointer[json.RawMessage], method string) bool {
	r := slot.Load()
	if r == nil {
		return false
	}
	m, ok := splitObject(frame)
	if !ok || string(m.method) != method || m.id == nil || !slot.CompareAndSwap(r, nil) {
		return false
	}
	resp := make([]byte, 0, len(*r)+64)
	resp = append(resp, `{"jsonrpc":"2.0","id":`...)
	resp = append(resp, m.id...)
	resp = append(resp, `,"result":`...)
	resp = append(resp, *r...)
	resp = append(resp, "}\n"...)
	// Not on the SDK's writing goroutine: the pipe waits for its reader.
	go func() { _, _ = c.sdkW.Write(resp) }()
	return true
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

func (c *child) closeStdin() {
	c.stdinOnce.Do(func() {
		c.stdin.Close()
		close(c.stdinClosed)
	})
}

// write sends one frame (which ends in '\n') to the child's stdin without
// waiting for the child to read it: a caller is never held by a server that
// does not read (for stdio, the goroutine that reads the client sends calls,
// startCall in package proxy). What the pipe does not take at once is queued
// and written in order by flush; a server that leaves more than
// maxQueued(c.max) bytes unread gets no more frames, and the write fails.
func (c *child) write(frame []byte) (int, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	switch {
	case c.werr != nil:
		return 0, c.werr
	case c.flushing:
		if c.queued+len(frame) > maxQueued(c.max) {
			return 0, fmt.Errorf("upstream %q: %w (%d bytes are waiting); nothing was sent", c.name, ErrNotReading, c.queued)
		}
		c.queue = append(c.queue, bytes.Clone(frame))
		c.queued += len(frame)
		return len(frame), nil
	}
	n, err := writeNow(c.stdin, frame)
	if err != nil {
		c.werr = err
		return n, err
	}
	if n < len(frame) {
		c.queue = append(c.queue, bytes.Clone(frame[n:]))
		c.queued, c.flushing = len(frame)-n, true
		go c.flush()
	}
	return len(frame), nil
}

// maxQueued bounds what write queues for a server that does not read: two
// of the largest messages, and at least 1 MiB.
func maxQueued(maxMsg int) int { return max(2*maxMsg, 1<<20) }

// flush writes the queue to stdin, waiting for the child to read, until the
// queue is empty or writing fails (stdin closed: the child is stopping).
func (c *child) flush() {
	for {
		c.wmu.Lock()
		if len(c.queue) == 0 || c.werr != nil {
			c.queue, c.queued, c.flushing = nil, 0, false
			c.wmu.Unlock()
			return
		}
		b := c.queue[0]
		c.queue[0] = nil
		c.queue = c.queue[1:]
		c.queued -= len(b)
		c.wmu.Unlock()
		if _, err := c.stdin.Write(b); err != nil {
			c.wmu.Lock()
			c.werr = err
			c.wmu.Unlock()
		}
	}
}

// stdinWriter is the SDK's side of the child's stdin. The SDK writes one
// whole frame per Write call, so sharing the mutex with the raw path keeps
// frames from interleaving.
type stdinWriter struct{ c *child }

func (w stdinWriter) Write(p []byte) (int, error) {
	if w.c.replayDiscover(p) {
		return len(p), nil
	}
	w.c.noteSent(p)
	return w.c.write(p)
}

func (w stdinWriter) Close() error {
	w.c.closeStdin()
	return nil
}

// readStdout is the only reader of the child's stdout.
func (c *child) readStdout(pw *io.PipeWriter) {
	lr := &lineReader{br: bufio.NewReaderSize(c.stdoutR, stdoutBufSize), max: c.max}
	sdk := pw // nil once the SDK stopped reading
	for {
		line, size, err := lr.next()
		switch {
		case line != nil:
			sdk = c.route(line, sdk)
		case size > 0:
			c.dropOversized(lr, size)
		}
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, os.ErrClosed) {
				c.log.Warn("reading stdout", "err", err)
			}
			break
		}
	}
	if c.closing.Load() {
		c.endCalls(fmt.Errorf("upstream %q: %w", c.name, ErrClosed))
	} else {
		// The exit status and the whole stderr tail come later, in Err.
		c.endCalls(fmt.Errorf("upstream %q: server exited: %w", c.name, ErrClosed))
	}
	// stdoutDone first: whoever sees the SDK fail on EOF must find it closed.
	close(c.stdoutDone)
	pw.Close()
}

var rawIDMarker = []byte(`"mf.`)

// relayLog hands a log message to Options.Log on the reader goroutine, in
// wire order with the responses to raw calls (see relayProgress). It reports
// false if req is not a log message.
func (c *child) relayLog(req *jsonrpc.Request) bool {
	if req.Method != "notifications/message" || req.ID.IsValid() || len(req.Params) == 0 || string(req.Params) == "null" {
		return false
	}
	p := new(mcp.LoggingMessageParams) //lint:ignore SA1019 logging is part of the protocol versions the proxy serves
	if err := json.Unmarshal(req.Params, p); err != nil {
		return false
	}
	c.logMsg(p)
	return true
}

// relayProgress hands a progress notification to Options.Progress on the
// reader goroutine, so that it is delivered before the response that follows
// it on the wire (the SDK's notification queue would race the raw path). It
// reports false if req is not a progress notification.
func (c *child) relayProgress(req *jsonrpc.Request) bool {
	if req.Method != "notifications/progress" || req.ID.IsValid() || len(req.Params) == 0 || string(req.Params) == "null" {
		return false
	}
	p := new(mcp.ProgressNotificationParams)
	if err := json.Unmarshal(req.Params, p); err != nil {
		return false
	}
	c.progress(p)
	return true
}

// route delivers one stdout line: to a waiting raw call, to the SDK, or to
// the log. Only a message the SDK decodes (with its own decoder) and will
// not choke on reaches it, since one bad message ends its session for good.
// It returns the SDK pipe, or nil once the SDK is gone.
func (c *child) route(line []byte, sdk *io.PipeWriter) *io.PipeWriter {
	msg := bytes.TrimSpace(line)
	c.spoke.Store(true)
	drop := func(why string) *io.PipeWriter {
		c.log.Warn("dropped stdout line that is not JSON-RPC", "why", why, "line", truncate(msg, noiseLogBytes))
		if c.probing.Load() {
			c.noisy.Store(true)
		}
		return sdk
	}
	switch {
	case len(msg) == 0 || (msg[0] != '{' && msg[0] != '['):
		c.log.Warn("dropped non-JSON stdout line", "line", truncate(msg, noiseLogBytes))
		if c.probing.Load() {
			c.noisy.Store(true)
		}
		return sdk
	case !utf8.Valid(msg):
		if id, ok := findRawID(msg); ok {
			c.deliver(id, reply{err: fmt.Errorf("upstream %q: tools/call response is not valid UTF-8", c.name)})
		}
		return drop("not valid UTF-8")
	case msg[0] == '[':
		return drop("a JSON-RPC batch, which protocol 2025-06-18 and later do not have")
	case jsonscan.Contains(msg, rawIDMarker) && c.divert(msg):
		return sdk
	}
	m, err := jsonrpc.DecodeMessage(msg)
	if err != nil {
		return drop("not a JSON-RPC message (" + err.Error() + ")")
	}
	switch m := m.(type) {
	case *jsonrpc.Response:
		if !c.sentBySDK(msg) {
			return drop("a response to an id never sent")
		}
	case *jsonrpc.Request:
		if m.ID.IsValid() && !exactID(msg) {
			return drop("a request whose id cannot be echoed exactly")
		}
		if c.progress != nil && c.relayProgress(m) {
			return sdk
		}
		if c.logMsg != nil && c.relayLog(m) {
			return sdk
		}
	}

	if sdk == nil {
		return nil
	}
	if c.probing.Load() {
		// The SDK does not read yet: a message before the answer to the
		// probe would block this reader, and the answer behind it.
		c.log.Warn("dropped a message sent before the server/discover probe was answered", "line", truncate(msg, noiseLogBytes))
		return sdk
	}
	buf := make([]byte, 0, len(msg)+1)
	if _, err := sdk.Write(append(append(buf, msg...), '\n')); err != nil {
		return nil // the SDK closed its end; keep draining for the raw path
	}
	return sdk
}

// exactID reports whether the top-level id of msg (valid JSON) is one the
// SDK echoes byte for byte: an int64 integer or a string without escapes.
func exactID(msg []byte) bool {
	m, _ := splitObject(msg)
	return canonicalID(m.id)
}

func canonicalID(id []byte) bool {
	if len(id) == 0 {
		return false
	}
	if id[0] == '"' {
		return bytes.IndexByte(id, '\\') < 0
	}
	if string(id) == "-0" {
		return false
	}
	_, err := strconv.ParseInt(string(id), 10, 64)
	return err == nil
}

// noteSent records the id of a request the SDK writes to the server.
func (c *child) noteSent(frame []byte) {
	m, ok := splitObject(frame)
	if !ok || m.method == nil || m.id == nil {
		return
	}
	c.smu.Lock()
	if c.sent == nil {
		c.sent = make(map[string]struct{})
	}
	c.sent[string(m.id)] = struct{}{}
	c.smu.Unlock()
}

// sentBySDK reports whether msg, a response, answers a request the SDK sent
// and that has not been answered yet; it forgets the request.
func (c *child) sentBySDK(msg []byte) bool {
	m, _ := splitObject(msg)
	c.smu.Lock()
	defer c.smu.Unlock()
	_, ok := c.sent[string(m.id)]
	delete(c.sent, string(m.id))
	return ok
}

// divert hands a response to a raw call to its caller. It reports false if
// msg is not such a response. Only the top level of msg is parsed; the
// result is checked to be JSON and copied, never decoded.
func (c *child) divert(msg []byte) bool {
	if !jsonscan.Valid(msg) {
		return false
	}
	m, ok := splitObject(msg)
	if !ok || m.method != nil {
		return false
	}
	id, ok := parseRawID(m.id)
	if !ok {
		return false
	}
	var rep reply
	switch {
	case m.err != nil && string(m.err) != "null":
		we := new(jsonrpc.Error)
		if err := json.Unmarshal(m.err, we); err != nil {
			rep.err = fmt.Errorf("upstream %q: tools/call: malformed error response: %w", c.name, err)
		} else {
			rep.err = we
		}
	case m.result != nil:
		rep.result = bytes.Clone(m.result)
	default:
		rep.err = fmt.Errorf("upstream %q: tools/call response has neither result nor error", c.name)
	}
	if !c.deliver(id, rep) {
		if id > c.nextID.Load() {
			c.log.Warn("dropped stdout line that is not JSON-RPC", "why", "a response to an id never sent", "id", string(m.id))
		} else {
			c.log.Debug("dropped response to a call that is no longer waiting", "id", string(m.id))
		}
	}
	return true
}

// members holds the raw values of the top-level members of a JSON-RPC
// message that the raw path looks at; nil when absent.
type members struct {
	id, method, result, err []byte
}

// splitObject finds the top-level members of msg, which must be valid JSON.
// Keys written with escapes are not recognised.
func splitObject(msg []byte) (m members, ok bool) {
	i := jsonscan.SkipSpace(msg, 0)
	if i >= len(msg) || msg[i] != '{' {
		return m, false
	}
	i = jsonscan.SkipSpace(msg, i+1)
	if i < len(msg) && msg[i] == '}' {
		return m, true
	}
	for i < len(msg) && msg[i] == '"' {
		end := jsonscan.SkipString(msg, i)
		key := msg[i+1 : end-1]
		i = jsonscan.SkipSpace(msg, end)
		if i >= len(msg) || msg[i] != ':' {
			return m, false
		}
		i = jsonscan.SkipSpace(msg, i+1)
		end = jsonscan.SkipValue(msg, i)
		switch string(key) {
		case "id":
			m.id = msg[i:end]
		case "method":
			m.method = msg[i:end]
		case "result":
			m.result = msg[i:end]
		case "error":
			m.err = msg[i:end]
		}
		i = jsonscan.SkipSpace(msg, end)
		if i >= len(msg) {
			break
		}
		switch msg[i] {
		case '}':
			return m, true
		case ',':
			i = jsonscan.SkipSpace(msg, i+1)
		default:
			return m, false
		}
	}
	return m, false
}

// dropOversized logs a stdout line over the limit and, if it was the
// response to a raw call, fails that call.
func (c *child) dropOversized(lr *lineReader, size int) {
	c.log.Warn("dropped oversized stdout line", "bytes", size, "limit", c.max,
		"head", truncate(lr.head, noiseLogBytes))
	for _, edge := range [][]byte{lr.head, lr.tail} {
		if id, ok := findRawID(edge); ok {
			c.deliver(id, reply{err: fmt.Errorf(
				"upstream %q: tools/call response of %d bytes exceeds the %d-byte limit; raise max message size or ask for less",
				c.name, size, c.max)})
			return
		}
	}
}

// deliver passes r to the raw call id, if it is still waiting.
func (c *child) deliver(id uint64, r reply) bool {
	c.pmu.Lock()
	fn, ok := c.pending[id]
	delete(c.pending, id)
	c.pmu.Unlock()
	if ok {
		fn(r) // one reply per call
	}
	return ok
}

// forget drops the pending raw call id; false if a reply was already sent.
func (c *child) forget(id uint64) bool {
	c.pmu.Lock()
	defer c.pmu.Unlock()
	_, ok := c.pending[id]
	delete(c.pending, id)
	return ok
}

// endCalls fails every pending raw call and all later ones with err.
func (c *child) endCalls(err error) {
	c.pmu.Lock()
	if c.ended != nil {
		c.pmu.Unlock()
		return
	}
	c.ended = err
	fns := make([]func(reply), 0, len(c.pending))
	for id, fn := range c.pending {
		fns = append(fns, fn)
		delete(c.pending, id)
	}
	c.pmu.Unlock()
	for _, fn := range fns { // outside the lock: a completion may write downstream
		fn(reply{err: err})
	}
}

var framePool = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

const maxPooledFrame = 64 << 10

// callTool is the raw path: one frame out, the result bytes back, untouched.
func (c *child) callTool(ctx context.Context, params json.RawMessage) (json.RawMessage, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := checkParams(params); err != nil {
		return nil, fmt.Errorf("upstream %q: tools/call: %w", c.name, err)
	}
	id := c.nextID.Add(1)
	ch := make(chan reply, 1)
	c.pmu.Lock()
	if err := c.ended; err != nil {
		c.pmu.Unlock()
		return nil, err
	}
	c.pending[id] = func(r reply) { ch <- r } // capacity 1, one reply per call
	c.pmu.Unlock()

	if m := c.meta.Load(); m != nil {
		params = withMeta(params, *m)
	}
	bp := framePool.Get().(*[]byte)
	frame := appendCallFrame((*bp)[:0], id, params)
	_, err := c.write(frame)
	if cap(frame) <= maxPooledFrame {
		*bp = frame
		framePool.Put(bp)
	}
	if err != nil {
		c.forget(id)
		c.pmu.Lock()
		ended := c.ended
		c.pmu.Unlock()
		if ended != nil {
			return nil, ended
		}
		return nil, fmt.Errorf("upstream %q: sending tools/call: %v: %w", c.name, err, ErrClosed)
	}

	select {
	case r := <-ch:
		return r.result, r.err
	case <-ctx.Done():
		if !c.forget(id) { // the reply won the race
			r := <-ch
			return r.result, r.err
		}
		c.cancelCall(id, ctx.Err())
		return nil, ctx.Err()
	}
}

// callToolAsync is callTool without waiting: done is called exactly once,
// on the stdout reader when the response arrives (so it must be quick), or
// when ctx ends (after the server was told), or when the connection ends.
func (c *child) callToolAsync(ctx context.Context, params json.RawMessage, done func(json.RawMessage, error)) {
	if err := ctx.Err(); err != nil {
		done(nil, err)
		return
	}
	if err := checkParams(params); err != nil {
		done(nil, fmt.Errorf("upstream %q: tools/call: %w", c.name, err))
		return
	}
	id := c.nextID.Add(1)
	var fired atomic.Bool
	var stop func() bool
	var stopMu sync.Mutex
	finish := func(r reply) {
		if !fired.CompareAndSwap(false, true) {
			return
		}
		stopMu.Lock()
		if stop != nil {
			stop()
		}
		stopMu.Unlock()
		done(r.result, r.err)
	}
	c.pmu.Lock()
	if err := c.ended; err != nil {
		c.pmu.Unlock()
		finish(reply{err: err})
		return
	}
	c.pending[id] = finish
	c.pmu.Unlock()

	if m := c.meta.Load(); m != nil {
		params = withMeta(params, *m)
	}
	bp := framePool.Get().(*[]byte)
	frame := appendCallFrame((*bp)[:0], id, params)
	_, err := c.write(frame)
	if cap(frame) <= maxPooledFrame {
		*bp = frame
		framePool.Put(bp)
	}
	if err != nil && c.forget(id) {
		if errors.Is(err, ErrNotReading) {
			finish(reply{err: err})
			return
		}
		c.pmu.Lock()
		ended := c.ended
		c.pmu.Unlock()
		if ended == nil {
			ended = fmt.Errorf("upstream %q: sending tools/call: %v: %w", c.name, err, ErrClosed)
		}
		finish(reply{err: ended})
		return
	}
	// The call's end on ctx is set up once the call is on its way, off the
	// path to the server; a ctx done by now ends the call at once (the
	// server then gets the request and its cancellation, in that order).
	stopMu.Lock()
	if !fired.Load() {
		stop = context.AfterFunc(ctx, func() {
			if c.forget(id) {
				c.cancelCall(id, ctx.Err())
				finish(reply{err: ctx.Err()})
			}
		})
	}
	stopMu.Unlock()
}

// cancelCall tells the server that nobody waits for call id any more.
func (c *child) cancelCall(id uint64, cause error) {
	reason, _ := json.Marshal(cause.Error())
	frame := make([]byte, 0, 160)
	frame = append(frame, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"mf.`...)
	frame = strconv.AppendUint(frame, id, 10)
	frame = append(frame, `","reason":`...)
	frame = append(frame, reason...)
	frame = append(frame, "}}\n"...)
	if _, err := c.write(frame); err != nil {
		c.log.Debug("sending notifications/cancelled", "err", err)
	}
}

// checkParams makes sure params is one JSON object, so that the frame built
// around it is one valid JSON-RPC message.
func checkParams(params []byte) error {
	p := bytes.TrimLeft(params, " \t\r\n")
	if len(p) == 0 || p[0] != '{' || !jsonscan.Valid(p) {
		return errors.New("params must be a JSON object")
	}
	return nil
}

// appendCallFrame appends a tools/call request line with id "mf.<id>".
// Newlines in params can only be insignificant whitespace; they become spaces
// so that the frame stays one line. All other bytes go out as they came.
func appendCallFrame(dst []byte, id uint64, params []byte) []byte {
	dst = append(dst, `{"jsonrpc":"2.0","id":"mf.`...)
	dst = strconv.AppendUint(dst, id, 10)
	dst = append(dst, `","method":"tools/call","params":`...)
	start := len(dst)
	dst = append(dst, params...)
	if bytes.IndexByte(params, '\n') >= 0 || bytes.IndexByte(params, '\r') >= 0 { // two memchr, not ContainsAny's loop
		for i := start; i < len(dst); i++ {
			if dst[i] == '\n' || dst[i] == '\r' {
				dst[i] = ' '
			}
		}
	}
	return append(dst, "}\n"...)
}

// parseRawID parses a raw-path id, the JSON string "mf.<digits>".
func parseRawID(raw []byte) (uint64, bool) {
	if len(raw) < 6 || !bytes.HasPrefix(raw, rawIDMarker) || raw[len(raw)-1] != '"' {
		return 0, false
	}
	var n uint64
	for _, b := range raw[4 : len(raw)-1] {
		if b < '0' || b > '9' || n > (1<<63)/10 {
			return 0, false
		}
		n = n*10 + uint64(b-'0')
	}
	return n, true
}

// findRawID finds `"id": "mf.<digits>"` in a fragment of a message.
func findRawID(b []byte) (uint64, bool) {
	key := []byte(`"id"`)
	for i := 0; ; {
		j := bytes.Index(b[i:], key)
		if j < 0 {
			return 0, false
		}
		k := i + j + len(key)
		i = k
		for k < len(b) && (b[k] == ' ' || b[k] == '\t') {
			k++
		}
		if k >= len(b) || b[k] != ':' {
			continue
		}
		k++
		for k < len(b) && (b[k] == ' ' || b[k] == '\t') {
			k++
		}
		end := k + len(rawIDMarker)
		for end < len(b) && b[end] >= '0' && b[end] <= '9' {
			end++
		}
		if end < len(b) {
			if id, ok := parseRawID(b[k : end+1]); ok {
				return id, true
			}
		}
	}
}

// truncate returns b as a string of at most n bytes.
func truncate(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	return string(b[:n]) + "…"
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

// lineReader splits a stream into lines of bounded size without a per-line
// allocation for lines that fit its buffer.
type lineReader struct {
	br   *bufio.Reader
	max  int    // longest line kept, without its terminator
	long []byte // a line longer than br's buffer
	head []byte // first bytes of the last oversized line
	tail []byte // last bytes of the last oversized line
}

const (
	edgeBytes   = 256
	keptLongBuf = 1 << 20
)

// next returns the next line with its '\n' (absent on the last line before
// EOF) and its size in bytes. A line longer than max is skipped: line is nil,
// size (> 0) says how long it was, and head and tail keep its ends. At the end
// of input, line is nil and size 0. err is the reader's error; line may be set
// along with it.
func (r *lineReader) next() (line []byte, size int, err error) {
	if cap(r.long) > keptLongBuf {
		r.long = nil // do not keep a huge buffer for ever
	}
	r.long = r.long[:0]
	over := false
	for {
		chunk, rerr := r.br.ReadSlice('\n')
		size += len(chunk)
		switch {
		case over:
			r.keepTail(chunk)
		case size > r.max+2: // longer than max even without "\r\n"
			over = true
			r.head = append(r.head[:0], r.long[:min(len(r.long), edgeBytes)]...)
			r.head = append(r.head, chunk[:min(len(chunk), edgeBytes-len(r.head))]...)
			r.tail = r.tail[:0]
			r.keepTail(r.long)
			r.keepTail(chunk)
			r.long = r.long[:0]
		case rerr == bufio.ErrBufferFull || len(r.long) > 0:
			r.long = append(r.long, chunk...)
			line = r.long
		default:
			line = chunk
		}
		if rerr == bufio.ErrBufferFull {
			continue
		}
		if !over && len(bytes.TrimRight(line, "\r\n")) > r.max {
			over = true
			r.head = append(r.head[:0], line[:min(len(line), edgeBytes)]...)
			r.tail = r.tail[:0]
			r.keepTail(line)
		}
		if over || size == 0 {
			return nil, size, rerr
		}
		return line, size, rerr
	}
}

// keepTail keeps the last edgeBytes bytes seen in tail.
func (r *lineReader) keepTail(b []byte) {
	if len(b) >= edgeBytes {
		r.tail = append(r.tail[:0], b[len(b)-edgeBytes:]...)
		return
	}
	r.tail = append(r.tail, b...)
	if n := len(r.tail) - edgeBytes; n > 0 {
		r.tail = append(r.tail[:0], r.tail[n:]...)
	}
}
