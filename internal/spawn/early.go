package spawn

import (
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// Early start. `manifold serve` spends its first ~10 ms initialising the
// runtime and its packages (gRPC, protobuf, OpenTelemetry, Prometheus, the
// go-sdk) and reading its config before it starts a server; each server
// then spends as long starting its own. Package internal/earlystart, whose
// init runs early (Go initialises a package once the packages it imports
// are, and it imports few), calls Early with the servers the config says
// the proxy starts at once: the reaper and those servers start in a
// goroutine while the rest of the binary initialises, each registered with
// the reaper as it starts. upstream takes each one (Take) where it would
// have started it, if its spawn arguments are still the config's; the
// proxy's reaper is the one started here (TakeReaper). What is not taken
// once the proxy's servers have first started is stopped (Discard): a
// config edited in between, a proxy that stopped first.
//
// A server is offered the client's capabilities as before: only its process
// starts early, and its initialize waits for the client's.

// Spec is what a server process is started with: see Server.
type Spec struct {
	Command   string
	Args, Env []string
	Dir       string
}

// earlyGrace is how long a server that was started early and not taken gets
// to exit after its stdin closes, then after SIGTERM, before SIGKILL. A
// variable for the tests.
var earlyGrace = 2 * time.Second

var early struct {
	ready chan struct{} // closed when the early start is done; nil if none ran

	mu     sync.Mutex
	procs  []*earlyProc   // guarded by mu
	taken  bool           // whether Take handed one over; guarded by mu
	reaper *exec.Cmd      // guarded by mu; nil once taken
	rw     io.WriteCloser // the reaper's stdin; guarded by mu
}

// earlyProc is a server started early and its spec.
type earlyProc struct {
	*Proc
	Spec
}

// Early starts, in a goroutine, the reaper (this binary, run with
// ReaperArg) and the servers that specs returns, each registered with the
// reaper as it starts, for Take and TakeReaper to hand over. A spec that
// cannot start is left to the proxy, which reports why; if the reaper cannot
// start, the servers are stopped (their children could outlive a killed
// proxy) and left to the proxy too. It does nothing where servers cannot
// start early (earlyOK), or if called before. specs runs in the goroutine.
func Early(specs func() []Spec) {
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
	reaper, rw, err := reaperCmd(exe)
	if err != nil {
		return
	}
	var wg sync.WaitGroup
	var reaperErr error
	wg.Go(func() { reaperErr = startReaper(reaper, rw) })
	procs := make([]*earlyProc, len(specs))
	for i, s := range specs {
		wg.Go(func() {
			p, err := Server(s.Command, s.Args, s.Env, s.Dir)
			if err != nil {
				return // the proxy starts it and says why it cannot
			}
			if _, err := io.WriteString(rw, "+"+strconv.Itoa(p.Cmd.Process.Pid)+"\n"); err != nil {
				stop(p, io.Discard, 0) // not registered: the proxy starts it itself
				return
			}
			procs[i] = &earlyProc{Proc: p, Spec: s}
		})
	}
	wg.Wait()
	if reaperErr != nil {
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

// Take returns the server started early with exactly these spawn arguments,
// if there is one and it has not been taken, and forgets it: the caller
// owns it (and its registration with the reaper). It waits for the early
// start to finish, if one runs.
func Take(command string, args, env []string, dir string) *Proc {
	if early.ready == nil {
		return nil
	}
	<-early.ready
	early.mu.Lock()
	defer early.mu.Unlock()
	for i, p := range early.procs {
		if p.Command == command && p.Dir == dir && slices.Equal(p.Args, args) && slices.Equal(p.Env, env) {
			early.procs = slices.Delete(early.procs, i, i+1)
			early.taken = true
			return p.Proc
		}
	}
	return nil
}

// TakeReaper returns the reaper started early, if it runs the binary at
// path, and its stdin's writer; the caller owns them. It returns nil if
// there is none, or it was taken.
func TakeReaper(path string) (*exec.Cmd, io.WriteCloser) {
	if early.ready == nil {
		return nil, nil
	}
	<-early.ready
	early.mu.Lock()
	defer early.mu.Unlock()
	if early.reaper == nil || early.reaper.Path != path {
		return nil, nil
	}
	cmd, w := early.reaper, early.rw
	early.reaper = nil
	return cmd, w
}

// Discard stops every server started early that was not taken: its stdin
// closes, then after earlyGrace its group gets SIGTERM, and after another
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
		wg.Go(func() { stop(p.Proc, rw, earlyGrace) })
	}
	wg.Wait()
	if reaper != nil {
		_ = rw.Close()
		_ = reaper.Wait()
	}
}

// stop ends p: its stdin closes, then after grace its group gets SIGTERM,
// after another grace SIGKILL; what it leaves in its group when it exits
// gets SIGTERM, and SIGKILL after grace. Only then is it reaped (where its
// exit can be seen without reaping it: until then its pid, and so its group
// id, cannot be reused) and unregistered from the reaper, whose stdin is rw.
func stop(p *Proc, rw io.Writer, grace time.Duration) {
	pid := p.Cmd.Process.Pid
	// Its output is read, so that a server that writes while it stops
	// does not block on a full pipe.
	go func() { _, _ = io.Copy(io.Discard, p.Stdout) }()
	go func() { _, _ = io.Copy(io.Discard, p.Stderr) }()
	p.Stdin.Close()
	exited := make(chan struct{})
	reaped := false
	go func() {
		if !WaitExited(pid) {
			_ = p.Cmd.Wait()
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
		SignalGroup(pid, syscall.SIGTERM)
		if !within(grace) {
			SignalGroup(pid, syscall.SIGKILL)
			<-exited
		}
	}
	if !reaped {
		if GroupHasOthers(pid, pid) {
			SignalGroup(pid, syscall.SIGTERM)
			for end := time.Now().Add(grace); GroupHasOthers(pid, pid) && time.Now().Before(end); {
				time.Sleep(20 * time.Millisecond)
			}
		}
		SignalGroup(pid, syscall.SIGKILL)
		_ = p.Cmd.Wait()
	}
	p.Stdout.Close()
	p.Stderr.Close()
	_, _ = io.WriteString(rw, "-"+strconv.Itoa(pid)+"\n")
}
