package upstream

import (
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
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manifold-mcp/manifold/internal/spawn"
)

// child is a stdio server process and the line mux on its pipes. This file
// spawns and connects it (with the server/discover probe); process.go has
// its lifecycle (the stop sequence, reaping, stderr), mux.go the line mux
// on stdin and stdout, rawcall.go the raw calls that bypass the SDK.
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
