package plugins

import (
	"context"
	"errors"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/hashicorp/go-plugin/runner"

	"github.com/manifold-mcp/manifold/internal/spawn"
	"github.com/manifold-mcp/manifold/internal/spawn/procgroup"
)

// errStartCancelled is returned by a runner killed before it started.
var errStartCancelled = errors.New("start cancelled")

// procRunner runs one plugin process for go-plugin (its runner.Runner). It
// exists because go-plugin's own runner hands the proxy's stdin to the plugin
// and has no process group: here the plugin's stdin is /dev/null, it leads
// its own process group, it dies with the proxy (Linux), and when it exits
// the rest of its group is killed, so nothing it started outlives it.
type procRunner struct {
	cmd    *exec.Cmd
	stdout io.ReadCloser
	stderr io.ReadCloser // tees into tail

	tail *tail // the last lines of the plugin's stderr

	mu     sync.Mutex
	pid    int  // guarded by mu; 0 until started
	killed bool // guarded by mu; Kill was called
	reaped bool // guarded by mu; Wait has reaped the process

	exited   chan struct{} // closed once the process has exited
	exitOnce sync.Once
	waitOnce sync.Once
	waitErr  error // written before waitDone is closed
	waitDone chan struct{}
}

var _ runner.Runner = (*procRunner)(nil)

// newProcRunner prepares the plugin process. extraEnv is go-plugin's
// handshake environment; it comes after env so that it wins.
func newProcRunner(path string, args, env, extraEnv []string, dir string) (*procRunner, error) {
	cmd := exec.Command(path, args...)
	cmd.Env = append(append([]string(nil), env...), extraEnv...)
	cmd.Dir = dir
	cmd.Stdin = nil // /dev/null: the plugin never sees the proxy's stdin
	spawn.SetProcAttr(cmd)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		stdout.Close()
		return nil, err
	}
	r := &procRunner{
		cmd:      cmd,
		stdout:   stdout,
		tail:     &tail{},
		exited:   make(chan struct{}),
		waitDone: make(chan struct{}),
	}
	r.stderr = teeReadCloser{Reader: io.TeeReader(stderr, r.tail), Closer: stderr}
	return r, nil
}

// Start starts the process, unless Kill came first.
func (r *procRunner) Start(context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.killed {
		r.stdout.Close()
		r.stderr.Close()
		return errStartCancelled
	}
	if err := r.cmd.Start(); err != nil {
		return err
	}
	r.pid = r.cmd.Process.Pid
	go r.watch()
	return nil
}

// watch notices the exit without reaping the process, kills what is left of
// its group (which closes the pipes that a grandchild may hold), and marks
// the runner exited. Where that is not possible, Wait marks it instead.
func (r *procRunner) watch() {
	if !procgroup.WaitExited(r.pid) {
		return
	}
	r.mu.Lock()
	if !r.reaped {
		procgroup.Signal(r.pid, syscall.SIGKILL)
	}
	r.mu.Unlock()
	r.exitOnce.Do(func() { close(r.exited) })
}

// Wait reaps the process. go-plugin calls it once it has read the process's
// stdout and stderr to the end.
func (r *procRunner) Wait(context.Context) error {
	r.waitOnce.Do(func() {
		err := r.cmd.Wait()
		r.mu.Lock()
		r.reaped = true
		r.mu.Unlock()
		r.waitErr = err
		close(r.waitDone)
		r.exitOnce.Do(func() { close(r.exited) })
	})
	<-r.waitDone
	return r.waitErr
}

// Kill kills the process group at once; before Start, it makes Start fail.
// It does not wait: Wait does.
func (r *procRunner) Kill(context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.killed = true
	if r.pid != 0 && !r.reaped {
		procgroup.Signal(r.pid, syscall.SIGKILL)
	}
	return nil
}

// Exited is closed once the process has exited.
func (r *procRunner) Exited() <-chan struct{} { return r.exited }

// ExitStatus describes how the process ended, once Wait has returned.
func (r *procRunner) ExitStatus() string {
	select {
	case <-r.waitDone:
	default:
		return "exited"
	}
	if r.waitErr == nil {
		return "exit status 0"
	}
	return r.waitErr.Error()
}

// PID returns the process id, 0 before Start.
func (r *procRunner) PID() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.pid
}

func (r *procRunner) Stdout() io.ReadCloser { return r.stdout }
func (r *procRunner) Stderr() io.ReadCloser { return r.stderr }
func (r *procRunner) Name() string          { return r.cmd.Path }

// ID is the pid; go-plugin treats "" as "nothing to kill".
func (r *procRunner) ID() string {
	if pid := r.PID(); pid != 0 {
		return strconv.Itoa(pid)
	}
	return ""
}

// Diagnose explains a failed handshake.
func (r *procRunner) Diagnose(context.Context) string {
	return "the program is not a Manifold plugin, or it wrote to stdout before serving: build it with plugins/sdk and log to stderr"
}

func (*procRunner) PluginToHost(network, addr string) (string, string, error) {
	return network, addr, nil
}

func (*procRunner) HostToPlugin(network, addr string) (string, string, error) {
	return network, addr, nil
}

type teeReadCloser struct {
	io.Reader
	io.Closer
}

// tail keeps the last lines of a stream, bounded in count and bytes.
type tail struct {
	mu      sync.Mutex
	partial []byte   // guarded by mu; an unterminated last line
	lines   []string // guarded by mu
	size    int      // guarded by mu; bytes in lines
}

const (
	tailLines = 20
	tailBytes = 4 << 10
)

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		i := strings.IndexByte(string(p), '\n')
		if i < 0 {
			t.partial = append(t.partial, p...)
			if len(t.partial) > tailBytes {
				t.partial = t.partial[len(t.partial)-tailBytes:]
			}
			break
		}
		t.add(string(append(t.partial, p[:i]...)))
		t.partial = t.partial[:0]
		p = p[i+1:]
	}
	return n, nil
}

// add appends a line; t.mu is held.
func (t *tail) add(line string) {
	line = strings.TrimRight(line, "\r")
	if len(line) > tailBytes {
		line = line[:tailBytes]
	}
	t.lines = append(t.lines, line)
	t.size += len(line)
	for len(t.lines) > tailLines || t.size > tailBytes {
		t.size -= len(t.lines[0])
		t.lines = t.lines[1:]
	}
}

// String returns the kept lines, joined by newlines.
func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	lines := t.lines
	if len(t.partial) > 0 {
		lines = append(lines[:len(lines):len(lines)], string(t.partial))
	}
	return strings.Join(lines, "\n")
}
