package e2e

import (
	"bufio"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestEarlyStart: `manifold serve` starts its stdio servers while it
// initialises, before the client's initialize (internal/earlystart), with one
// reaper; the proxy then takes those processes, so each server runs once,
// offered the client's capabilities at its initialize as before (one whose
// env holds a ${VAR:-default} too: the early start expands it as the
// config does). A lazy server does not start early.
func TestEarlyStart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	count := func(name string) string { return filepath.Join(dir, name) }
	cfg := writeConfig(t, "[catalog]\nmode = \"full\"\n"+
		fixture("alpha", []string{"-count", count("alpha")})+
		fixture("beta", []string{"-count", count("beta"), "-extra", "secrets"}, `env = { B = "${MANIFOLD_E2E_NEVER_SET:-2}", A = "1" }`)+
		fixture("later", []string{"-count", count("later")}, `start = "lazy"`))
	r := startRaw(t, cfg)
	waitFor(t, 20*time.Second, "alpha and beta started before the client's initialize", func() bool {
		a, _ := eraCounts(t, count("alpha"))
		b, _ := eraCounts(t, count("beta"))
		return len(a) == 1 && len(b) == 1
	})
	if _, err := os.Stat(count("later")); err == nil {
		t.Error("the lazy server started before its first call")
	}
	checkNice(t, r.cmd.Process.Pid) // one reaper, at its lower priority
	r.send(t, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"roots":{}},"clientInfo":{"name":"e2e","version":"0"}}}`)
	r.await(t, "1")
	r.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	r.send(t, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	list := string(r.await(t, "2").Result)
	for _, want := range []string{`"alpha__echo"`, `"beta__echo"`, `"later__echo"`} {
		if !strings.Contains(list, want) {
			t.Errorf("tools/list has no %s: %.300s", want, list)
		}
	}
	r.send(t, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"beta__secrets","arguments":{}}}`)
	if m := r.await(t, "3"); !strings.Contains(string(m.Result), `A=1`) || !strings.Contains(string(m.Result), `B=2`) {
		t.Errorf("beta__secrets = %.300s %s, want the config's env, A=1 and B=2", m.Result, m.Error)
	}
	for _, name := range []string{"alpha", "beta"} {
		if starts, _ := eraCounts(t, count(name)); len(starts) != 1 {
			t.Errorf("%s started %d times (%v), want once: the proxy took the process started early", name, len(starts), starts)
		}
	}
	checkNice(t, r.cmd.Process.Pid)
}

// TestEarlyStartSIGKILL: a proxy killed with SIGKILL before its client
// initialized, while its servers started early wait for it, leaves no
// process: they are registered with the reaper when they start, not when
// the proxy takes them, and a server's own child that ignores the end of
// its input dies with its group.
func TestEarlyStartSIGKILL(t *testing.T) {
	t.Parallel()
	cfg := writeConfig(t, fixture("spawner", []string{"-mode", "spawn"})+fixture("alpha", nil))
	cmd := command(manifoldBin, "serve", "--config", cfg)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	sigkill := startToKill(t, cmd)
	var tree []procInfo
	waitFor(t, 20*time.Second, "the reaper, both servers and the spawner's sleep started", func() bool {
		tree = descendants(cmd.Process.Pid)
		var reapers, fixtures, sleeps int
		for _, p := range tree {
			switch {
			case strings.Contains(p.cmdline, "__manifold-reaper"):
				reapers++
			case strings.HasPrefix(p.cmdline, fixtureBin):
				fixtures++
			case strings.HasPrefix(p.cmdline, "sleep 600"):
				sleeps++
			}
		}
		return reapers == 1 && fixtures == 2 && sleeps == 1
	})
	time.Sleep(100 * time.Millisecond) // the proxy has written their registrations
	sigkill()
	if left := waitGone(tree, goneBound); len(left) > 0 {
		t.Errorf("processes left %s after manifold was killed with SIGKILL before its client initialized:\n%s", goneBound, describe(left))
		killAll(left)
	}
}

// TestServeConfigThroughPipe: a config that comes through a pipe
// (`manifold serve --config <(…)`) can be read once only, and the proxy
// reads it: the early start leaves it alone, and the servers start.
func TestServeConfigThroughPipe(t *testing.T) {
	t.Parallel()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := command(manifoldBin, "serve", "--config", "/dev/fd/3")
	cmd.ExtraFiles = []*os.File{r}
	var stderr syncBuffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r.Close()
	defer func() {
		stdin.Close()
		if err := cmd.Wait(); err != nil {
			t.Errorf("manifold: %v\n%s", err, stderr.String())
		}
	}()
	if _, err := io.WriteString(w, "[catalog]\nmode = \"full\"\n"+fixture("alpha", nil)); err != nil {
		t.Fatal(err)
	}
	w.Close()
	for _, line := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"e2e","version":"0"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
	} {
		if _, err := io.WriteString(stdin, line+"\n"); err != nil {
			t.Fatalf("write: %v\n%s", err, stderr.String())
		}
	}
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		m, err := parseFrame(sc.Bytes())
		if err != nil {
			t.Fatalf("stdout line %q: %v", sc.Bytes(), err)
		}
		if string(m.ID) == "2" {
			if !strings.Contains(string(m.Result), `"alpha__echo"`) {
				t.Fatalf("tools/list = %.300s %s, want alpha's tools\n%s", m.Result, m.Error, stderr.String())
			}
			return
		}
	}
	t.Fatalf("stdout ended before the tools/list answer\n%s", stderr.String())
}

// TestEarlyStartInitOrder: the binary initialises internal/earlystart (whose
// init starts the servers) before the heavy packages: protobuf's
// descriptors, gRPC, Prometheus, the go-sdk and the proxy, as
// GODEBUG=inittrace=1 shows the order of a real start.
func TestEarlyStartInitOrder(t *testing.T) {
	t.Parallel()
	cmd := command(manifoldBin, "version")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("manifold version: %v\n%s", err, out)
	}
	at := map[string]int{}
	for i, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) > 2 && f[0] == "init" {
			at[f[1]] = i + 1
		}
	}
	early, ok := at["github.com/manifold-mcp/manifold/internal/earlystart"]
	if !ok {
		t.Fatalf("no init of internal/earlystart in the trace:\n%s", out)
	}
	for _, heavy := range []string{
		"google.golang.org/protobuf/reflect/protodesc",
		"google.golang.org/grpc",
		"github.com/prometheus/client_golang/prometheus",
		"github.com/google/jsonschema-go/jsonschema",
		"github.com/manifold-mcp/manifold/proxy",
	} {
		n, ok := at[heavy]
		if !ok {
			t.Errorf("no init of %s in the trace (renamed? pick another heavy package)", heavy)
			continue
		}
		if n < early {
			t.Errorf("%s is initialised (line %d of the trace) before internal/earlystart (line %d)", heavy, n, early)
		}
	}
}
