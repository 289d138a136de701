package outside

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	neturl "net/url"
	"os/exec"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Transports of a Target.
const (
	Stdio = "stdio"
	HTTP  = "http"
)

// Direct is the Name of the targets every other target of the same
// transport is compared with: the echo server itself.
const Direct = "direct"

// Target is one way to reach an echo tool.
type Target struct {
	Name      string   // Direct, "manifold", or another proxy's name
	Transport string   // Stdio or HTTP
	Command   []string // Stdio: the command each session starts (mcp.CommandTransport)
	URL       string   // HTTP: the endpoint
	PID       int      // HTTP: the process serving URL, whose CPU is read
	Tool      string   // the echo tool's name through this target
}

// Options are what a client of one Measure does.
type Options struct {
	Version string        // the protocol version the client offers
	Warmup  int           // calls before any is measured
	Calls   int           // sequential calls, one at a time
	Workers int           // workers sharing the session after the sequential calls
	For     time.Duration // how long the workers call
	// Roots makes the client declare roots, as a go-sdk client with nil
	// Capabilities does (BenchmarkFloor's); the outside client declares
	// none.
	Roots bool
}

// Outside is the outside measurement of issue 42: 20 warm-up calls, 500
// sequential calls, then 8 workers for 4.5 s (the outside client ran them
// "for 4-5 s").
var Outside = Options{Version: "2025-11-25", Warmup: 20, Calls: 500, Workers: 8, For: 4500 * time.Millisecond}

// Result is one session's measurement.
type Result struct {
	P50, P99   time.Duration // of the sequential calls
	Throughput float64       // calls per second of the workers
	Calls      int           // the calls measured: sequential and the workers'
	SeqCalls   int           // the sequential calls alone
	Own        Proc          // the target's process over the measured calls
	Seq        Proc          // it over the sequential calls alone
	Tree       Proc          // it and its descendants (a proxy's servers)
	ClientCPU  time.Duration // this process's CPU over the measured calls
	Dials      int           // HTTP: connections the client opened over the measured calls
}

// Measure connects a client to t, calls its tool as o says, and closes
// the session (over stdio, the process ends with it).
func Measure(ctx context.Context, t Target, o Options) (Result, error) {
	var dials atomic.Int64
	cs, pid, err := connect(ctx, t, o.Version, o.Roots, &dials)
	if err != nil {
		return Result{}, err
	}
	defer cs.Close()
	for range o.Warmup {
		if err := Call(ctx, cs, t.Tool); err != nil {
			return Result{}, fmt.Errorf("%s %s: warm-up: %w", t.Name, t.Transport, err)
		}
	}
	own0, tree0, c0, dials0 := readProc(pid), readTree(pid), clientCPU(), dials.Load()
	lat := make([]time.Duration, 0, o.Calls)
	for range o.Calls {
		t0 := time.Now()
		if err := Call(ctx, cs, t.Tool); err != nil {
			return Result{}, fmt.Errorf("%s %s: %w", t.Name, t.Transport, err)
		}
		lat = append(lat, time.Since(t0))
	}
	seq := readProc(pid)
	n, elapsed, err := workers(ctx, cs, t.Tool, o.Workers, o.For)
	if err != nil {
		return Result{}, fmt.Errorf("%s %s: workers: %w", t.Name, t.Transport, err)
	}
	own1, tree1, c1 := readProc(pid), readTree(pid), clientCPU()
	slices.Sort(lat)
	r := Result{Throughput: float64(n) / elapsed.Seconds(), Calls: o.Calls + n, SeqCalls: o.Calls,
		Own: own1.sub(own0), Seq: seq.sub(own0), Tree: tree1.sub(tree0), ClientCPU: c1 - c0, Dials: int(dials.Load() - dials0)}
	if len(lat) > 0 {
		r.P50, r.P99 = quantile(lat, 0.5), quantile(lat, 0.99)
	}
	return r, nil
}

// Connect connects the outside client to t at version, and returns the
// session and the pid of t's process.
func Connect(ctx context.Context, t Target, version string) (*mcp.ClientSession, int, error) {
	return connect(ctx, t, version, false, nil)
}

// connect is Connect that counts in dials, if not nil, the connections
// the HTTP client opens (its dialer is the one an http.Transport without
// DialContext uses, a zero net.Dialer, counted).
func connect(ctx context.Context, t Target, version string, roots bool, dials *atomic.Int64) (*mcp.ClientSession, int, error) {
	// Empty capabilities: a nil Capabilities declares roots.
	opts := &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}}
	if roots {
		opts.Capabilities = nil
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "outside", Version: "0"}, opts)
	var (
		tr  mcp.Transport
		cmd *exec.Cmd
		pid = t.PID
	)
	switch t.Transport {
	case Stdio:
		if len(t.Command) == 0 {
			return nil, 0, fmt.Errorf("%s: no command", t.Name)
		}
		cmd = exec.Command(t.Command[0], t.Command[1:]...)
		tr = &mcp.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}
	case HTTP:
		ht := &http.Transport{MaxIdleConnsPerHost: 512}
		if dials != nil {
			var d net.Dialer
			ht.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
				dials.Add(1)
				return d.DialContext(ctx, network, addr)
			}
		}
		tr = &mcp.StreamableClientTransport{Endpoint: t.URL, HTTPClient: &http.Client{Transport: ht}}
	default:
		return nil, 0, fmt.Errorf("%s: unknown transport %q", t.Name, t.Transport)
	}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cs, err := c.Connect(cctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		return nil, 0, fmt.Errorf("%s %s: connect: %w", t.Name, t.Transport, err)
	}
	if v := cs.InitializeResult().ProtocolVersion; v != version {
		cs.Close()
		return nil, 0, fmt.Errorf("%s %s: negotiated %s, not %s", t.Name, t.Transport, v, version)
	}
	if cmd != nil {
		pid = cmd.Process.Pid
	}
	return cs, pid, nil
}

// Call calls tool with a message and checks that it answered.
func Call(ctx context.Context, cs *mcp.ClientSession, tool string) error {
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"message": "benchmark payload"}})
	if err != nil {
		return err
	}
	if res.IsError || len(res.Content) == 0 {
		return fmt.Errorf("%s: unexpected result %+v", tool, res)
	}
	return nil
}

// workers has n workers call tool on cs until d has passed, and returns
// the calls they made and the time from their start to the last answer.
func workers(ctx context.Context, cs *mcp.ClientSession, tool string, n int, d time.Duration) (int, time.Duration, error) {
	var (
		calls    atomic.Int64
		wg       sync.WaitGroup
		firstErr atomic.Value
	)
	start := time.Now()
	end := start.Add(d)
	for range n {
		wg.Go(func() {
			for time.Now().Before(end) {
				if err := Call(ctx, cs, tool); err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
				calls.Add(1)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err, _ := firstErr.Load().(error); err != nil {
		return 0, 0, err
	}
	return int(calls.Load()), elapsed, nil
}

func quantile(sorted []time.Duration, q float64) time.Duration {
	return sorted[min(len(sorted)-1, int(float64(len(sorted))*q))]
}

// Rounds measures each target once per round, rounds times, the order
// reversed every other round, and returns the results by round and
// target. logf, if not nil, is told of each measurement.
func Rounds(ctx context.Context, targets []Target, o Options, rounds int, logf func(string, ...any)) ([][]Result, error) {
	res := make([][]Result, rounds)
	for r := range rounds {
		res[r] = make([]Result, len(targets))
		for k := range targets {
			i := k
			if r%2 == 1 {
				i = len(targets) - 1 - k
			}
			m, err := Measure(ctx, targets[i], o)
			if err != nil {
				return nil, fmt.Errorf("round %d: %w", r+1, err)
			}
			res[r][i] = m
			if logf != nil {
				logf("round %d: %-10s %-5s p50 %6d µs, %7.0f calls/s, CPU %4.0f µs/call",
					r+1, targets[i].Name, targets[i].Transport, m.P50.Microseconds(), m.Throughput, m.Own.PerCall(m.Calls).CPU)
			}
		}
	}
	return res, nil
}

// Server is a process serving MCP over streamable HTTP, started by Serve.
type Server struct {
	URL  string
	cmd  *exec.Cmd
	done chan error
}

// Serve starts command with "{port}" in its arguments and in url replaced
// by a free port of 127.0.0.1, and waits (up to 30 s) until the host and
// port of url accept connections. Its stdin is a pipe that stays open (the
// fixture ends when its stdin does); Stop ends it.
func Serve(command []string, url string) (*Server, error) {
	if len(command) == 0 {
		return nil, errors.New("no command")
	}
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	args := make([]string, len(command))
	for i, a := range command {
		args[i] = replacePort(a, port)
	}
	url = replacePort(url, port)
	u, err := neturl.Parse(url)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(args[0], args[1:]...)
	if _, err := cmd.StdinPipe(); err != nil { // closed by Wait
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &Server{URL: url, cmd: cmd, done: make(chan error, 1)}
	go func() { s.done <- cmd.Wait() }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", u.Host, time.Second)
		if err == nil {
			c.Close()
			return s, nil
		}
		select {
		case err := <-s.done:
			s.done <- err
			return nil, fmt.Errorf("%s ended before it listened on %s: %v", args[0], u.Host, err)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.Stop()
			return nil, fmt.Errorf("%s did not listen on %s within 30 s", args[0], u.Host)
		}
	}
}

// PID is the server's process id.
func (s *Server) PID() int { return s.cmd.Process.Pid }

// Stop sends the server SIGTERM and, if it has not ended 2 s later,
// SIGKILL, and waits for it.
func (s *Server) Stop() {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
		return
	case <-time.After(2 * time.Second):
	}
	_ = s.cmd.Process.Kill()
	<-s.done
}

// FreePort returns a port of 127.0.0.1 that was free a moment ago.
func FreePort() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	_, port, err := net.SplitHostPort(ln.Addr().String())
	return port, err
}
