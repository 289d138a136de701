// Package prestart starts the config's stdio servers, and the reaper, while
// `manifold serve` is still initialising, and hands them to package spawn
// when the proxy gets to them. It imports nothing whose initialisation the
// standard library sorts late (no os/exec, path/filepath, regexp or net), so
// that a package's init can call Start early: see internal/earlystart.
package prestart

import (
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/manifold-mcp/manifold/internal/spawn/procgroup"
)

// Early start. `manifold serve` spends its first milliseconds initialising
// the runtime and its packages (gRPC, protobuf, OpenTelemetry, Prometheus,
// the go-sdk) and reading its config before it starts a server; each server
// then spends as long starting its own. Package internal/earlystart, whose
// init runs early (Go initialises a package once the packages it imports
// are, the first ready one by import path at each step, and it imports
// few), calls Start with the servers the config says the proxy starts at
// once: the reaper and those servers start in a goroutine while the rest of
// the binary initialises, each registered with the reaper as it starts.
// spawn.Take hands each one to upstream where it would have started it, if
// its spawn arguments are still the config's and its program is the one
// os/exec finds; the proxy's reaper is the one started here
// (spawn.TakeReaper). What is not taken once the proxy's servers have first
// started is stopped (Discard): a config edited in between, a proxy that
// stopped first.
//
// A server is offered the client's capabilities as before: only its process
// starts early, and its initialize waits for the client's.

// ReaperArg is the first argument that makes the proxy's binary run as the
// reaper (package internal/reaper, whose Arg it is; this package does not
// import it: the reaper's side wants nothing this package needs
// initialised).
const ReaperArg = "__manifold-reaper"

// Spec is what a server process is started with: its command (a program
// name looked up in PATH, or a path), its arguments, the environment added
// after the proxy's, and its folder (the proxy's own if empty).
type Spec struct {
	Command   string
	Args, Env []string
	Dir       string
}

// Proc is a process started here: the program it runs (the command as
// found in PATH) and, for a server, the proxy's ends of its pipes.
type Proc struct {
	Process *os.Process
	Path    string
	// Stdin is written by the proxy; Stdout and Stderr are read.
	Stdin, Stdout, Stderr *os.File
}

// grace is how long a server that was started early and not taken gets to
// exit after its stdin closes, then after SIGTERM, before SIGKILL. A
// variable for the tests.
var grace = 2 * time.Second

var early struct {
	ready chan struct{} // closed when the early start is done; nil if none ran

	mu     sync.Mutex
	procs  []*earlyProc   // guarded by mu
	taken  bool           // whether Take handed one over; guarded by mu
	reaper *Proc          // guarded by mu; nil once taken
	rw     io.WriteCloser // the reaper's stdin; guarded by mu
}

// earlyProc is a server started early and its spec.
type earlyProc struct {
	*Proc
	Spec
}

// Start starts, in a goroutine, the reaper (this binary, run with
// ReaperArg) and the servers that specs returns, each registered with the
// reaper as it starts, for Take and TakeReaper to hand over. A spec that
// cannot start here is left to the proxy, which starts it or reports why;
// if the reaper cannot start, the servers are stopped (their children could
// outlive a killed proxy) and left to the proxy too. It does nothing where
// servers cannot start early (earlyOK), or if called before. specs runs in
// the goroutine.
func Start(specs func() []Spec) {
	if !earlyOK || early.ready != nil {
		return
	}
	early.ready = make(chan struct{})
	go func() {
		defer close(early.ready)
		startEarly(specs())
	}()
}

// startEarly starts the reaper and the servers of specs, all at once: each
// server's registration waits in the reaper's stdin pipe until it reads it.
// If the reaper cannot start, neither do the servers (they are stopped).
func startEarly(specs []Spec) {
	if len(specs) == 0 {
		return
	}
	exe, err := os.Executable()
	if err != nil {
		return
	}
	// The reaper's stdin: what is written before it starts waits in the
	// pipe for it.
	r, rw, err := os.Pipe()
	if err != nil {
		return
	}
	var wg sync.WaitGroup
	var reaper *Proc
	var reaperErr error
	wg.Go(func() { reaper, reaperErr = startReaper(exe, r) })
	procs := make([]*earlyProc, len(specs))
	for i, s := range specs {
		wg.Go(func() {
			p, err := server(s)
			if err != nil {
				return // the proxy starts it, or says why it cannot
			}
			if _, err := io.WriteString(rw, "+"+strconv.Itoa(p.Process.Pid)+"\n"); err != nil {
				stop(p, io.Discard, 0) // not registered: the proxy starts it itself
				return
			}
			procs[i] = &earlyProc{Proc: p, Spec: s}
		})
	}
	wg.Wait()
	r.Close()
	if reaperErr != nil {
		rw.Close()
		// A server's children could outlive a killed proxy.
		for _, p := range procs {
			if p != nil {
				stop(p.Proc, io.Discard, 0)
			}
		}
		return
	}
	early.mu.Lock()
	defer early.mu.Unlock()
	early.reaper, early.rw = reaper, rw
	for _, p := range procs {
		if p != nil {
			early.procs = append(early.procs, p)
		}
	}
}

// Take returns the server started early with exactly these spawn
// arguments, if there is one and it has not been taken, and forgets it:
// the caller owns it (and its registration with the reaper). The caller's
// same says whether the program it runs is the one the caller would have
// run: if not, it is stopped instead (as Discard stops it), and Take
// returns nil. Take waits for the early start to finish, if one runs.
func Take(s Spec, same func(path string) bool) *Proc {
	if early.ready == nil {
		return nil
	}
	<-early.ready
	early.mu.Lock()
	defer early.mu.Unlock()
	for i, p := range early.procs {
		if p.Command == s.Command && p.Dir == s.Dir && slices.Equal(p.Args, s.Args) && slices.Equal(p.Env, s.Env) {
			early.procs = slices.Delete(early.procs, i, i+1)
			if !same(p.Path) {
				go stop(p.Proc, early.rw, grace)
				return nil
			}
			early.taken = true
			return p.Proc
		}
	}
	return nil
}

// TakeReaper returns the reaper started early, if it runs the binary at
// path, and its stdin's writer; the caller owns them. It returns nil if
// there is none, or it was taken.
func TakeReaper(path string) (*Proc, io.WriteCloser) {
	if early.ready == nil {
		return nil, nil
	}
	<-early.ready
	early.mu.Lock()
	defer early.mu.Unlock()
	if early.reaper == nil || early.reaper.Path != path {
		return nil, nil
	}
	p, w := early.reaper, early.rw
	early.reaper = nil
	return p, w
}

// Discard stops every server started early that was not taken: its stdin
// closes, then after grace its group gets SIGTERM, and after another
// SIGKILL. It returns once they have exited and been unregistered from the
// reaper. A reaper that was not taken is stopped too, unless a server was:
// it is then that server's, until the process ends. It is safe to call
// more than once, and from several goroutines.
func Discard() {
	if early.ready == nil {
		return
	}
	<-early.ready
	early.mu.Lock()
	procs, rw, reaper := early.procs, early.rw, early.reaper
	early.procs = nil
	if early.taken {
		reaper = nil
	} else {
		early.reaper = nil
	}
	early.mu.Unlock()
	var wg sync.WaitGroup
	for _, p := range procs {
		wg.Go(func() { stop(p.Proc, rw, grace) })
	}
	wg.Wait()
	if reaper != nil {
		_ = rw.Close()
		_, _ = reaper.Process.Wait()
	}
}

// stop ends p: its stdin closes, then after grace its group gets SIGTERM,
// after another grace SIGKILL; what it leaves in its group when it exits
// gets SIGTERM, and SIGKILL after grace. Only then is it reaped (where its
// exit can be seen without reaping it: until then its pid, and so its group
// id, cannot be reused) and unregistered from the reaper, whose stdin is rw.
func stop(p *Proc, rw io.Writer, grace time.Duration) {
	pid := p.Process.Pid
	// Its output is read, so that a server that writes while it stops
	// does not block on a full pipe.
	go func() { _, _ = io.Copy(io.Discard, p.Stdout) }()
	go func() { _, _ = io.Copy(io.Discard, p.Stderr) }()
	p.Stdin.Close()
	exited := make(chan struct{})
	reaped := false
	go func() {
		if !procgroup.WaitExited(pid) {
			_, _ = p.Process.Wait()
			reaped = true
		}
		close(exited)
	}()
	within := func(d time.Duration) bool {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-exited:
			return true
		case <-t.C:
			return false
		}
	}
	if !within(grace) {
		procgroup.Signal(pid, syscall.SIGTERM)
		if !within(grace) {
			procgroup.Signal(pid, syscall.SIGKILL)
			<-exited
		}
	}
	if !reaped {
		if procgroup.HasOthers(pid, pid) {
			procgroup.Signal(pid, syscall.SIGTERM)
			for end := time.Now().Add(grace); procgroup.HasOthers(pid, pid) && time.Now().Before(end); {
				time.Sleep(20 * time.Millisecond)
			}
		}
		procgroup.Signal(pid, syscall.SIGKILL)
		_, _ = p.Process.Wait()
	}
	p.Stdout.Close()
	p.Stderr.Close()
	_, _ = io.WriteString(rw, "-"+strconv.Itoa(pid)+"\n")
}

// server starts s as os/exec would (spawn.Server): its command looked up
// in PATH, the proxy's environment followed by s.Env with the last value of
// each name kept, in s.Dir, in its own process group and (on Linux) killed
// by the kernel if the proxy dies, with pipes for its standard streams. A
// command that os/exec would refuse or might find elsewhere (one found
// through a relative PATH entry) is not started here.
func server(s Spec) (*Proc, error) {
	exe, ok := lookPath(s.Command)
	if !ok {
		return nil, errNotHere
	}
	env, ok := dedupEnv(append(os.Environ(), s.Env...))
	if !ok {
		return nil, errNotHere
	}
	pipes, err := NewPipes()
	if err != nil {
		return nil, err
	}
	proc, err := os.StartProcess(exe, append([]string{s.Command}, s.Args...), &os.ProcAttr{
		Dir:   s.Dir,
		Env:   env,
		Files: pipes.Child[:],
		Sys:   ServerAttr(),
	})
	pipes.Started(err)
	if err != nil {
		return nil, err
	}
	return &Proc{Process: proc, Path: exe, Stdin: pipes.Parent[0], Stdout: pipes.Parent[1], Stderr: pipes.Parent[2]}, nil
}

// Pipes are the standard streams of a server about to start: Child holds
// the ends it gets (stdin's read end, stdout's and stderr's write ends),
// Parent the proxy's (stdin's write end, stdout's and stderr's read ends).
type Pipes struct{ Child, Parent [3]*os.File }

// NewPipes makes a server's three pipes.
func NewPipes() (*Pipes, error) {
	var p Pipes
	for i := range 3 {
		r, w, err := os.Pipe()
		if err != nil {
			p.close(p.Child[:i])
			p.close(p.Parent[:i])
			return nil, fmt.Errorf("creating pipes: %w", err)
		}
		if i == 0 {
			p.Child[i], p.Parent[i] = r, w
		} else {
			p.Child[i], p.Parent[i] = w, r
		}
	}
	return &p, nil
}

// Started closes the child's ends, of which a started child has its own
// copies; if it did not start (err), the proxy's too.
func (p *Pipes) Started(err error) {
	p.close(p.Child[:])
	if err != nil {
		p.close(p.Parent[:])
	}
}

func (*Pipes) close(fs []*os.File) {
	for _, f := range fs {
		f.Close()
	}
}

// startReaper starts the proxy's binary at exe as the reaper, as
// spawn.Reaper does (its stdin r, its stdout /dev/null, its stderr the
// proxy's, its own process group, a lower priority).
func startReaper(exe string, r *os.File) (*Proc, error) {
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		return nil, err
	}
	defer null.Close()
	env, _ := dedupEnv(os.Environ())
	proc, err := os.StartProcess(exe, []string{exe, ReaperArg}, &os.ProcAttr{
		Env:   env,
		Files: []*os.File{r, null, os.Stderr},
		Sys:   GroupAttr(),
	})
	if err != nil {
		return nil, err
	}
	Lower(proc.Pid)
	return &Proc{Process: proc, Path: exe}, nil
}

// errNotHere is a server left to the proxy to start.
var errNotHere = errorString("not started early")

type errorString string

func (e errorString) Error() string { return string(e) }

// lookPath finds the program that os/exec's LookPath finds for file on
// Unix, if it finds one at an absolute path (a result it refuses,
// ErrDot, is not found here): file itself if it holds a '/', else the
// first PATH entry that holds an executable file of that name (an empty
// entry is the current folder).
func lookPath(file string) (string, bool) {
	if file == "" || strings.IndexByte(file, 0) >= 0 {
		return "", false
	}
	if strings.Contains(file, "/") {
		return file, executable(file)
	}
	pathEnv := os.Getenv("PATH")
	if pathEnv == "" {
		return "", false
	}
	for _, dir := range strings.Split(pathEnv, ":") {
		if dir == "" {
			dir = "."
		}
		p := path.Join(dir, file)
		if executable(p) {
			return p, path.IsAbs(p)
		}
	}
	return "", false
}

// dedupEnv is the environment os/exec passes on Unix for env: the last
// entry of each name kept, in the order of those last entries; false if an
// entry holds a NUL byte (os/exec refuses to start the command).
func dedupEnv(env []string) ([]string, bool) {
	out := make([]string, 0, len(env))
	saw := make(map[string]bool, len(env))
	for n := len(env); n > 0; n-- {
		kv := env[n-1]
		if strings.IndexByte(kv, 0) >= 0 {
			return nil, false
		}
		i := strings.Index(kv, "=")
		if i == 0 {
			i = strings.Index(kv[1:], "=") + 1
		}
		if i < 0 {
			if kv != "" {
				out = append(out, kv)
			}
			continue
		}
		if k := kv[:i]; !saw[k] {
			saw[k] = true
			out = append(out, kv)
		}
	}
	slices.Reverse(out)
	return out, true
}
