package e2e

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Bounds of the harness. None of them is an assertion on speed: each is a
// deadline after which something is declared stuck.
const (
	testTimeout = 90 * time.Second // one test's calls, at most
	exitBound   = 30 * time.Second // manifold's exit after stdin closes or SIGTERM
	goneBound   = 15 * time.Second // its processes' disappearance after it exits
	readyBound  = 30 * time.Second // the HTTP listener coming up
	// redisBackBound is a replica's return to Redis after it restarts
	// (go-redis probes a pool that stopped dialling once a second).
	redisBackBound = 15 * time.Second
	listWaitAll    = "30s" // first_list_wait of the tests' configs (writeConfig)
)

// protocolVersion is the version the test clients pin (ARCHITECTURE §3).
const protocolVersion = "2025-11-25"

// childBinsEnv, set in a test binary's environment, holds the paths of the
// manifold and fixture binaries (joined by os.PathListSeparator): the
// binary is TestOrphanDiesWithTest's child, which builds nothing and runs
// TestOrphanChild.
const childBinsEnv = "MANIFOLD_E2E_CHILD_BINS"

// Paths set by TestMain.
var (
	moduleRoot  string // the folder holding go.mod
	manifoldBin string // the built manifold binary
	fixtureBin  string // the built fixture server
)

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	root, err := findModuleRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	moduleRoot = root
	dir, err := os.MkdirTemp("", "manifold-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	// Caches (lazy catalogs, status files, the era cache) of the manifolds
	// under test stay in this run, unless a test sets its own; set once
	// the binaries are built, since go's own build cache is under
	// XDG_CACHE_HOME too (an empty one rebuilds every package).
	isolateCaches := func() bool {
		if err := os.Setenv("XDG_CACHE_HOME", filepath.Join(dir, "cache")); err != nil {
			fmt.Fprintln(os.Stderr, "e2e:", err)
			return false
		}
		return true
	}
	manifoldBin = filepath.Join(dir, "manifold")
	fixtureBin = filepath.Join(dir, "fixture")
	if bins := os.Getenv(childBinsEnv); bins != "" { // a child of TestOrphanDiesWithTest: built already
		manifoldBin, fixtureBin, _ = strings.Cut(bins, string(os.PathListSeparator))
		if !isolateCaches() {
			return 1
		}
		return m.Run()
	}
	// manifold is built with the race detector when the tests are, so that a
	// race inside the proxy fails the test that provoked it.
	var raceFlag []string
	if raceEnabled {
		raceFlag = []string{"-race"}
	}
	builds := [][]string{
		append(append([]string{"build"}, raceFlag...), "-o", manifoldBin, "./cmd/manifold"),
		{"build", "-o", fixtureBin, "./testdata/fixture"},
	}
	// Both at once: they share few packages (the fixture is built without
	// -race), so on a cold build cache each has its own to compile.
	failed := make([]string, len(builds))
	var wg sync.WaitGroup
	for i, args := range builds {
		wg.Go(func() {
			cmd := command(goTool(), args...)
			cmd.Dir = root
			if out, err := cmd.CombinedOutput(); err != nil {
				failed[i] = fmt.Sprintf("e2e: go %s: %v\n%s", strings.Join(args, " "), err, out)
			}
		})
	}
	wg.Wait()
	if msg := strings.Join(failed, ""); msg != "" {
		fmt.Fprint(os.Stderr, msg)
		return 1
	}
	if !isolateCaches() {
		return 1
	}
	if err := quickerRuns(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	return m.Run()
}

// e2eParallel is how many of this package's parallel tests run at once
// unless `go test -parallel N` says otherwise: at least 8, whatever the
// number of cores. The tests spend most of their time waiting on the
// processes they start (servers starting, answers, backoffs, exits), not
// on a core, so that go's default (GOMAXPROCS: 2 on a 2-core machine)
// left the cores mostly idle (0.5 of 2 used over a whole run).
func e2eParallel() int { return max(8, runtime.GOMAXPROCS(0)) }

// quickerRuns sets what makes the run take less time without changing what
// any test checks: the parallelism (e2eParallel) unless -parallel is given,
// and, in the environment every process the tests start inherits, unless
// set there already:
//   - GORACE atexit_sleep_ms=0 (quickRaceExit);
//   - OTEL_BSP_SCHEDULE_DELAY=100: a manifold with [telemetry] traces sends
//     its spans every 100 ms instead of every 5 s (the OpenTelemetry
//     default, which the README names), so that a test waiting for a span
//     waits for its export, not for the batch timer.
func quickerRuns() error {
	flag.Parse() // testing's flags, so that an explicit -parallel is seen
	explicit := false
	flag.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "test.parallel" })
	if !explicit {
		if err := flag.Set("test.parallel", strconv.Itoa(e2eParallel())); err != nil {
			return err
		}
	}
	if err := os.Setenv("GORACE", quickRaceExit(os.Getenv("GORACE"))); err != nil {
		return err
	}
	if _, ok := os.LookupEnv("OTEL_BSP_SCHEDULE_DELAY"); !ok {
		return os.Setenv("OTEL_BSP_SCHEDULE_DELAY", "100")
	}
	return nil
}

// quickRaceExit returns the GORACE options gorace with atexit_sleep_ms=0
// added, unless they set it. A program built with -race sleeps
// atexit_sleep_ms (1 s by default) when it exits, so that other goroutines
// can still report a race; every manifold the tests start (serve, each
// one-shot command, its reaper) inherits the setting from the test binary's
// environment, and exits when it is done instead of a second later. A race
// is still reported when it happens, on manifold's stderr, which the tests
// read (logOnFailure, runCLIIn).
func quickRaceExit(gorace string) string {
	for _, f := range strings.Fields(gorace) {
		if strings.HasPrefix(f, "atexit_sleep_ms=") {
			return gorace
		}
	}
	return strings.TrimSpace(gorace + " atexit_sleep_ms=0")
}

// command is exec.Command for every process the tests start: the process
// dies with the test binary (dieWithTest). TestCommandsDieWithTest keeps
// exec.Command out of the tests.
func command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	dieWithTest(cmd)
	return cmd
}

// commandContext is command with exec.CommandContext.
func commandContext(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	dieWithTest(cmd)
	return cmd
}

func findModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

// goTool is the go command that runs these tests ($GOROOT/bin/go, which
// `go test` sets), else the one in PATH.
func goTool() string {
	if root := os.Getenv("GOROOT"); root != "" {
		if p := filepath.Join(root, "bin", "go"); fileExists(p) {
			return p
		}
	}
	return "go"
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// testCtx returns a context bounded by testTimeout and the test's life.
func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

// syncBuffer is a bytes.Buffer safe for one writer and concurrent readers.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer // guarded by mu
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// --- configs --------------------------------------------------------------

// writeConfig writes body as proxy.toml into a fresh temporary folder and
// returns its path. Unless body sets first_list_wait, it sets it to
// listWaitAll (see withListWait).
func writeConfig(t *testing.T, body string) string {
	t.Helper()
	body = withListWait(body)
	path := filepath.Join(t.TempDir(), "proxy.toml")
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// withListWait sets first_list_wait = listWaitAll in body, unless body sets
// it, so that a test's first list holds every server that starts however
// loaded the machine is; only the tests of the first list itself
// (firstlist_test.go) depend on its short default. The key goes on the first
// blank line before the first table (fixture tables start with one), so
// that the line numbers of the body stay as written; only in a body without
// such a line is it a line of its own at the top, so that the body's lines
// move down by one (read line numbers from the written file then).
func withListWait(body string) string {
	if strings.Contains(body, "first_list_wait") {
		return body
	}
	key := "first_list_wait = " + tomlStr(listWaitAll)
	off := 0
	for line := range strings.Lines(body) {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "[") {
			break
		}
		if trimmed == "" {
			return body[:off] + key + body[off:]
		}
		off += len(line)
	}
	return key + "\n" + body
}

// tomlStr quotes s as a TOML basic string.
func tomlStr(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

func tomlStrs(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = tomlStr(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// fixture returns a [servers.NAME] table that runs the fixture named name
// with the given extra flags, followed by extra TOML lines.
func fixture(name string, flags []string, extra ...string) string {
	args := append([]string{"-name", name}, flags...)
	var b strings.Builder
	fmt.Fprintf(&b, "\n[servers.%s]\ncommand = %s\nargs = %s\n", name, tomlStr(fixtureBin), tomlStrs(args))
	for _, l := range extra {
		b.WriteString(l + "\n")
	}
	return b.String()
}

// nodeBin returns the path of an npm server's bin in node_modules/.bin, or
// skips the test when it (or node) is not installed.
func nodeBin(t *testing.T, name string) string {
	t.Helper()
	p, ok := optionalNodeBin(name)
	if !ok {
		t.Skipf("%s or node is not installed; run `npm ci` in %s", name, moduleRoot)
	}
	return p
}

// optionalNodeBin is nodeBin for tests that can run without the server.
func optionalNodeBin(name string) (string, bool) {
	dir := os.Getenv("MANIFOLD_E2E_NODE_MODULES")
	if dir == "" {
		dir = filepath.Join(moduleRoot, "node_modules")
	}
	p := filepath.Join(dir, ".bin", name)
	if _, err := os.Stat(p); err != nil {
		return "", false
	}
	if _, err := exec.LookPath("node"); err != nil {
		return "", false
	}
	return p, true
}

// --- manifold over stdio --------------------------------------------------

// proc is one running `manifold serve`.
type proc struct {
	t      *testing.T
	cmd    *exec.Cmd
	stderr *syncBuffer

	mu      sync.Mutex
	stopped bool
	code    int // exit code, once stopped
}

// stdioProxy is manifold serving stdio to a go-sdk client.
type stdioProxy struct {
	*proc
	cs *mcp.ClientSession
}

// startStdio runs `manifold serve --config cfg` and connects a go-sdk client
// to its stdin/stdout. When the test ends the client closes, manifold must
// exit 0 within exitBound, and every process it started must be gone; its
// stderr is logged if the test failed.
func startStdio(t *testing.T, cfg string) *stdioProxy {
	t.Helper()
	return startStdioClient(t, cfg, mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "0"}, nil), protocolVersion)
}

// startStdioClient is startStdio with the given client (its handlers and
// roots) offering the given protocol version.
func startStdioClient(t *testing.T, cfg string, client *mcp.Client, version string) *stdioProxy {
	t.Helper()
	return startStdioVersionEnv(t, cfg, client, version)
}

// startStdioEnv is startStdioClient at protocolVersion with env (KEY=VALUE)
// added to manifold's environment, which its servers inherit (for instance
// an XDG_CACHE_HOME of its own, so that the test can run in parallel).
func startStdioEnv(t *testing.T, cfg string, client *mcp.Client, env ...string) *stdioProxy {
	t.Helper()
	return startStdioVersionEnv(t, cfg, client, protocolVersion, env...)
}

func startStdioVersionEnv(t *testing.T, cfg string, client *mcp.Client, version string, env ...string) *stdioProxy {
	t.Helper()
	p := &proc{t: t, stderr: &syncBuffer{}}
	p.cmd = command(manifoldBin, "serve", "--config", cfg)
	p.cmd.Env = append(procEnviron(t), env...)
	p.cmd.Stderr = p.stderr
	p.cmd.WaitDelay = 5 * time.Second
	t.Cleanup(p.logOnFailure)
	// TerminateDuration is beyond exitBound: the transport must never be the
	// one that ends manifold; stop does, and says so.
	tr := &mcp.CommandTransport{Command: p.cmd, TerminateDuration: 10 * time.Minute}
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	cs, err := client.Connect(ctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		if p.cmd.Process != nil {
			_ = p.cmd.Process.Kill()
			_ = p.cmd.Wait()
		}
		t.Fatalf("connect to manifold: %v\nstderr:\n%s", err, p.stderr)
	}
	sp := &stdioProxy{proc: p, cs: cs}
	t.Cleanup(func() {
		if code := sp.stop(); code != 0 {
			t.Errorf("manifold exited with status %d, want 0", code)
		}
	})
	return sp
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

func (p *proc) logOnFailure() {
	if s := p.stderr.String(); strings.Contains(s, "WARNING: DATA RACE") {
		p.t.Errorf("manifold reported a data race:\n%s", s)
	} else if p.t.Failed() {
		p.t.Logf("manifold stderr:\n%s", s)
	}
}

// stop closes the client session (closing manifold's stdin), waits for
// manifold to exit and for every process it had started to be gone, and
// returns manifold's exit code. It is idempotent.
func (sp *stdioProxy) stop() int {
	return sp.proc.stop(func() {
		_ = sp.cs.Close() // closes stdin and waits for the process
	})
}

// stop snapshots the processes under manifold, runs end (which must make
// manifold exit and wait for it), and checks they are all gone. It is
// idempotent and returns the exit code.
func (p *proc) stop(end func()) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return p.code
	}
	p.stopped = true
	t := p.t
	tree := descendants(p.pid())
	done := make(chan struct{})
	go func() {
		end()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(exitBound):
		t.Errorf("manifold (pid %d) did not exit within %s; killing it", p.pid(), exitBound)
		_ = syscall.Kill(p.pid(), syscall.SIGKILL)
		<-done
	}
	p.code = -1
	if st := p.cmd.ProcessState; st != nil {
		p.code = st.ExitCode()
	}
	if left := waitGone(tree, goneBound); len(left) > 0 {
		t.Errorf("%d process(es) started by manifold still run after it exited:\n%s", len(left), describe(left))
		killAll(left)
	}
	return p.code
}

// --- manifold over HTTP ---------------------------------------------------

// httpProxy is manifold serving streamable HTTP on a loopback port.
type httpProxy struct {
	*proc
	addr   string // host:port
	exited chan struct{}
}

// endpoint is the URL of the MCP endpoint.
func (hp *httpProxy) endpoint() string { return "http://" + hp.addr + "/mcp" }

// startHTTP runs `manifold serve --config cfg --http 127.0.0.1:PORT` on a
// free port and waits until it listens. When the test ends it gets SIGTERM
// and must exit 0 with every process it started gone.
func startHTTP(t *testing.T, cfg string) *httpProxy {
	t.Helper()
	var lastErr string
	for range 3 { // another process may take the port between probe and bind
		hp, retry := tryStartHTTP(t, cfg)
		if hp != nil {
			return hp
		}
		lastErr = retry
	}
	t.Fatalf("manifold --http did not start:\n%s", lastErr)
	return nil
}

func tryStartHTTP(t *testing.T, cfg string) (*httpProxy, string) {
	t.Helper()
	addr := freePort(t)
	return launchHTTP(t, addr, "serve", "--config", cfg, "--http", addr)
}

// launchHTTP runs manifold with args, which make it listen on addr, and
// waits until it does; see startHTTP.
func launchHTTP(t *testing.T, addr string, args ...string) (*httpProxy, string) {
	t.Helper()
	p := &proc{t: t, stderr: &syncBuffer{}}
	p.cmd = command(manifoldBin, args...)
	p.cmd.Stderr = p.stderr
	p.cmd.Env = procEnviron(t)
	p.cmd.WaitDelay = 5 * time.Second
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start manifold: %v", err)
	}
	hp := &httpProxy{proc: p, addr: addr, exited: make(chan struct{})}
	go func() {
		_ = p.cmd.Wait()
		close(hp.exited)
	}()
	deadline := time.After(readyBound)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !strings.Contains(p.stderr.String(), "serving MCP on") {
		select {
		case <-hp.exited:
			return nil, p.stderr.String()
		case <-deadline:
			_ = p.cmd.Process.Kill()
			<-hp.exited
			t.Fatalf("manifold did not listen on %s within %s\nstderr:\n%s", addr, readyBound, p.stderr)
		case <-tick.C:
		}
	}
	t.Cleanup(p.logOnFailure)
	t.Cleanup(func() {
		code := p.stop(func() {
			_ = syscall.Kill(p.pid(), syscall.SIGTERM)
			<-hp.exited
		})
		if code != 0 {
			t.Errorf("manifold exited with status %d after SIGTERM, want 0", code)
		}
	})
	return hp, ""
}

// serveLoopback serves h over HTTP on a free loopback port until the test
// ends and returns its base URL ("http://127.0.0.1:PORT"): the tests'
// remote servers, issuers and receivers.
func serveLoopback(t *testing.T, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return "http://" + ln.Addr().String()
}

// secretEnv sets env in the test's environment, which is how secrets reach
// the manifold under test, and XDG_CACHE_HOME to a folder of the test's
// own, which it returns (its status files and caches are the test's to
// read). It uses t.Setenv: not for parallel tests.
func secretEnv(t *testing.T, env map[string]string) (cache string) {
	t.Helper()
	for k, v := range env {
		t.Setenv(k, v)
	}
	cache = t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	return cache
}

// procEnvs holds, by test name, what setProcEnv adds to the environment of
// the processes a test starts.
var procEnvs sync.Map // string (t.Name()) -> []string (KEY=VALUE)

// setProcEnv adds env (KEY=VALUE pairs) to the environment of every manifold
// that t or a subtest of t starts through the harness (startStdio,
// startStdioClient, startHTTP, runCLI, runCLIIn) or with procEnviron:
// t.Setenv for those processes only, so that t may be parallel. A later
// pair of the same key wins, as a subtest's over its parent's.
func setProcEnv(t *testing.T, env ...string) {
	t.Helper()
	name := t.Name()
	prev, _ := procEnvs.Load(name)
	had, _ := prev.([]string)
	procEnvs.Store(name, append(slices.Clone(had), env...))
	t.Cleanup(func() { procEnvs.Delete(name) })
}

// procEnviron is the environment of a process t starts: the test binary's,
// then what setProcEnv added for the tests t is a subtest of, outermost
// first, then for t (exec.Cmd uses the last value of a key given twice).
func procEnviron(t *testing.T) []string {
	env := os.Environ()
	name := t.Name()
	names := []string{name}
	for i := strings.LastIndexByte(name, '/'); i >= 0; i = strings.LastIndexByte(name, '/') {
		name = name[:i]
		names = append(names, name)
	}
	for _, n := range slices.Backward(names) {
		if add, ok := procEnvs.Load(n); ok {
			env = append(env, add.([]string)...)
		}
	}
	return env
}

// freePort returns a loopback host:port that was free a moment ago.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

// connectHTTP connects a go-sdk client to hp; the session closes when the
// test ends.
func connectHTTP(t *testing.T, hp *httpProxy) *mcp.ClientSession {
	t.Helper()
	return connectHTTPClient(t, hp, mcp.NewClient(&mcp.Implementation{Name: "e2e-http", Version: "0"}, nil), protocolVersion)
}

// connectHTTPClient is connectHTTP with the given client offering the given
// protocol version.
func connectHTTPClient(t *testing.T, hp *httpProxy, client *mcp.Client, version string) *mcp.ClientSession {
	t.Helper()
	tr := &mcp.StreamableClientTransport{Endpoint: hp.endpoint(), HTTPClient: &http.Client{Timeout: testTimeout}}
	cs, err := client.Connect(testCtx(t), tr, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect over HTTP: %v", err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// --- processes ------------------------------------------------------------

// procInfo identifies one process; start (in clock ticks since boot) tells
// it from a later process that reuses the pid.
type procInfo struct {
	pid, ppid int
	start     uint64
	state     byte
	nice      int // of its main thread
	cmdline   string
}

// readProc reads /proc/PID/stat and cmdline.
func readProc(pid int) (procInfo, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procInfo{}, false
	}
	// "pid (comm) state ppid ...": comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procInfo{}, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return procInfo{}, false
	}
	ppid, _ := strconv.Atoi(f[1])
	start, _ := strconv.ParseUint(f[19], 10, 64)
	nice, _ := strconv.Atoi(f[16])
	pi := procInfo{pid: pid, ppid: ppid, start: start, state: f[0][0], nice: nice}
	if cl, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline"); err == nil {
		pi.cmdline = strings.TrimSpace(strings.ReplaceAll(string(cl), "\x00", " "))
	}
	return pi, true
}

// descendants returns every live process whose ancestor chain includes root.
func descendants(root int) []procInfo {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := make(map[int][]procInfo)
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if pi, ok := readProc(pid); ok {
			children[pi.ppid] = append(children[pi.ppid], pi)
		}
	}
	var out []procInfo
	queue := []int{root}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		for _, c := range children[pid] {
			out = append(out, c)
			queue = append(queue, c.pid)
		}
	}
	return out
}

// alive reports whether the process p still runs: same pid, same start
// time, not a zombie.
func alive(p procInfo) bool {
	now, ok := readProc(p.pid)
	return ok && now.start == p.start && now.state != 'Z' && now.state != 'X'
}

// waitGone polls until none of procs is alive or bound passes, and returns
// those still alive.
func waitGone(procs []procInfo, bound time.Duration) []procInfo {
	deadline := time.Now().Add(bound)
	for {
		var left []procInfo
		for _, p := range procs {
			if alive(p) {
				left = append(left, p)
			}
		}
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func describe(procs []procInfo) string {
	var b strings.Builder
	for _, p := range procs {
		fmt.Fprintf(&b, "  pid %d (ppid %d, state %c): %s\n", p.pid, p.ppid, p.state, p.cmdline)
	}
	return b.String()
}

// killAll SIGKILLs the processes, by pid, that are still the ones recorded.
func killAll(procs []procInfo) {
	for _, p := range procs {
		if alive(p) {
			_ = syscall.Kill(p.pid, syscall.SIGKILL)
		}
	}
}

// watchTree polls the processes under root until done is closed and returns
// every one it saw, for processes that live too briefly to be snapshotted
// at a chosen moment.
func watchTree(root int, done <-chan struct{}) []procInfo {
	seen := make(map[procInfo]bool)
	var out []procInfo
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		for _, p := range descendants(root) {
			key := procInfo{pid: p.pid, start: p.start}
			if !seen[key] {
				seen[key] = true
				out = append(out, p)
			}
		}
		select {
		case <-done:
			return out
		case <-tick.C:
		}
	}
}

// cmdEnv sets cmd's environment to env and returns cmd.
func cmdEnv(cmd *exec.Cmd, env []string) *exec.Cmd {
	cmd.Env = env
	return cmd
}
