package e2e

import (
	"io"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSIGKILLLeavesNoProcess: when manifold is killed with SIGKILL, nothing
// it started survives, not even a server's own child that ignores the end of
// its input, nor a server that ignores SIGTERM: the reaper kills every
// registered process group.
func TestSIGKILLLeavesNoProcess(t *testing.T) {
	t.Parallel()
	cfg := writeConfig(t, fixture("spawner", []string{"-mode", "spawn"})+
		fixture("stubborn", []string{"-mode", "ignore-term"})+fixture("alpha", nil))
	cmd := command(manifoldBin, "serve", "--config", cfg)
	var stderr syncBuffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	sigkill := startToKill(t, cmd)
	// The upstreams are initialized when the client is.
	if _, err := io.WriteString(stdin, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"e2e","version":"0"}}}`+"\n"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "all three servers up and the grandchild started", func() bool {
		s := stderr.String()
		return strings.Count(s, `msg="server up"`) >= 3 && grandchildRE.MatchString(s)
	})
	checkNice(t, cmd.Process.Pid)
	done := make(chan struct{})
	treec := make(chan []procInfo, 1)
	go func() { treec <- watchTree(cmd.Process.Pid, done) }()
	time.Sleep(200 * time.Millisecond) // let the watcher see the whole tree
	var grandchild string
	if m := grandchildRE.FindStringSubmatch(stderr.String()); m != nil {
		grandchild = m[1]
	}
	sigkill()
	close(done)
	tree := <-treec
	sawGrandchild := false
	for _, p := range tree {
		sawGrandchild = sawGrandchild || (grandchild != "" && itoa(p.pid) == grandchild)
	}
	if !sawGrandchild {
		t.Fatalf("the spawn fixture's grandchild (pid %s) was not among manifold's processes: %s", grandchild, describe(tree))
	}
	if left := waitGone(tree, goneBound); len(left) > 0 {
		t.Errorf("processes left %s after manifold was killed with SIGKILL:\n%s", goneBound, describe(left))
		killAll(left)
	}
}

// checkNice: the reaper runs at nice 10 above manifold (its start yields
// the CPU to the servers'), and the servers and their children at
// manifold's own.
func checkNice(t *testing.T, pid int) {
	t.Helper()
	self, ok := readProc(pid)
	if !ok {
		t.Fatalf("cannot read manifold's /proc/%d/stat", pid)
	}
	reapers := 0
	for _, p := range descendants(pid) {
		want := self.nice
		if strings.Contains(p.cmdline, "__manifold-reaper") {
			reapers++
			want = min(self.nice+10, 19)
		}
		if p.nice != want {
			t.Errorf("nice %d, want %d: %d %s (manifold's is %d)", p.nice, want, p.pid, p.cmdline, self.nice)
		}
	}
	if reapers != 1 {
		t.Errorf("%d reaper processes under manifold, want 1:\n%s", reapers, describe(descendants(pid)))
	}
}

func itoa(n int) string {
	var b [20]byte
	i := len(b)
	if n == 0 {
		return "0"
	}
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	return string(b[i:])
}

// TestReaperSkipsHeavyInit: run as the reaper, the binary exits once its
// input ends, cleanly, without having initialised the packages that make
// manifold's own start slow and big (gRPC, protobuf, OpenTelemetry,
// Prometheus, net/http, the go-sdk): the reaper runs from an early
// package's init (internal/reaper), so it costs the servers starting beside
// it little CPU and memory. The runtime's init trace says which packages
// were initialised.
func TestReaperSkipsHeavyInit(t *testing.T) {
	t.Parallel()
	cmd := command(manifoldBin, "__manifold-reaper")
	cmd.Env = append(cmd.Environ(), "GODEBUG=inittrace=1")
	cmd.Stdin = strings.NewReader("+" + itoa(1<<22) + "\n") // a group that does not exist
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("reaper: %v\n%s", err, stderr.String())
	}
	inits := map[string]bool{}
	for line := range strings.SplitSeq(stderr.String(), "\n") {
		if f := strings.Fields(line); len(f) > 2 && f[0] == "init" {
			inits[f[1]] = true
		}
	}
	if !inits["runtime"] || !inits["os"] {
		// internal/reaper's own init does not end (it exits): the
		// runtime's and os's, before it, show the trace works.
		t.Fatalf("no init trace of runtime and os:\n%s", stderr.String())
	}
	for _, heavy := range []string{
		"google.golang.org/grpc",
		"google.golang.org/protobuf/reflect/protoregistry",
		"github.com/prometheus/client_golang/prometheus",
		"go.opentelemetry.io/otel",
		"net/http",
		"github.com/modelcontextprotocol/go-sdk/mcp",
		"github.com/manifold-mcp/manifold/proxy",
	} {
		if inits[heavy] {
			t.Errorf("the reaper initialised %s (%d packages in all)", heavy, len(inits))
		}
	}
}

// startToKill starts cmd, a manifold the test kills with SIGKILL by calling
// the func it returns, which waits for it; a cmd the test did not kill (a
// failure before) is killed and waited for at the end of the test.
func startToKill(t *testing.T, cmd *exec.Cmd) (sigkill func()) {
	t.Helper()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	t.Cleanup(func() {
		if !killed {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	return func() {
		t.Helper()
		if err := syscall.Kill(cmd.Process.Pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		killed = true
		_ = cmd.Wait()
	}
}
