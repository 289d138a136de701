package earlystart

import (
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/manifold-mcp/manifold/internal/config"
	"github.com/manifold-mcp/manifold/internal/spawn"
)

// TestServeConfig: only command lines of serve on stdio that serve would
// accept start servers early, and the config found is the one serve would
// use.
func TestServeConfig(t *testing.T) {
	for _, c := range []struct {
		args []string
		path string
		ok   bool
	}{
		{[]string{"serve"}, "", true},
		{[]string{"serve", "--config", "a.toml"}, "a.toml", true},
		{[]string{"serve", "-config=a.toml"}, "a.toml", true},
		{[]string{"serve", "a.toml"}, "a.toml", true},
		{[]string{"serve", "a.toml", "--log-level", "debug"}, "a.toml", true},
		{[]string{"serve", "--log-level=warn", "--config", "a.toml", "--watch-interval", "2s"}, "a.toml", true},
		{[]string{"serve", "--http", "127.0.0.1:0", "--config", "a.toml"}, "", false}, // a service
		{[]string{"serve", "--config", "a.toml", "--allow-remote", "--http=0.0.0.0:7777"}, "", false},
		{[]string{"serve", "--", "-odd.toml"}, "-odd.toml", true},
		{[]string{"serve", "--config", "a.toml", "b.toml"}, "", false}, // serve refuses two
		{[]string{"serve", "a.toml", "b.toml"}, "", false},
		{[]string{"serve", "--config", "a.toml", "--config", "b.toml"}, "", false},
		{[]string{"serve", "--unknown"}, "", false},
		{[]string{"serve", "--watch-interval", "soon"}, "", false},
		{[]string{"serve", "--config"}, "", false},
		{[]string{"serve", "--help"}, "", false},
		{[]string{"tools", "--config", "a.toml"}, "", false},
		{[]string{"call", "x"}, "", false},
		{[]string{spawn.ReaperArg}, "", false},
		{nil, "", false},
	} {
		path, ok := serveConfig(c.args)
		if path != c.path || ok != c.ok {
			t.Errorf("serveConfig(%q) = %q, %v; want %q, %v", c.args, path, ok, c.path, c.ok)
		}
	}
}

// TestSpecs: the servers started early are the ones the proxy starts at
// once, with the spawn arguments it gives them (the env sorted by key, the
// folder the config's unless set): not lazy ones, remote ones, or those
// started per session or per identity.
func TestSpecs(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "proxy.toml")
	body := `
[servers.cat]
command = "cat"
args = ["-u"]
env = { B = "2", A = "1" }

[servers.there]
command = "cat"
cwd = "/"

[servers.later]
command = "cat"
start = "lazy"

[servers.remote]
url = "http://127.0.0.1:1/mcp"

[servers.mine]
command = "cat"
isolation = "session"

[servers.yours]
command = "cat"
isolation = "identity"
`
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	got := specs(cfg)
	want := []spawn.Spec{
		{Command: "cat", Args: []string{"-u"}, Env: []string{"A=1", "B=2"}, Dir: dir},
		{Command: "cat", Dir: "/"},
	}
	if !slices.EqualFunc(got, want, func(a, b spawn.Spec) bool {
		return a.Command == b.Command && a.Dir == b.Dir && slices.Equal(a.Args, b.Args) && slices.Equal(a.Env, b.Env)
	}) {
		t.Errorf("specs = %+v, want %+v", got, want)
	}
}

// TestSpecsAtReadsRegularFilesOnly: a config that comes through a pipe is
// left to the proxy, unread (it can be read once only), and so is a FIFO
// the config names as a policy file; a regular config is read.
func TestSpecsAtReadsRegularFilesOnly(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	regular := filepath.Join(dir, "proxy.toml")
	body := "policy_files = [\"fifo\"]\n\n[servers.cat]\ncommand = \"cat\"\n"
	if err := os.WriteFile(regular, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path string
		want int
	}{{fifo, 0}, {regular, 1}, {filepath.Join(dir, "missing.toml"), 0}} {
		got := make(chan []spawn.Spec, 1)
		go func() { got <- specsAt(c.path) }()
		select {
		case s := <-got:
			if len(s) != c.want {
				t.Errorf("specsAt(%s) = %+v, want %d", c.path, s, c.want)
			}
		case <-time.After(10 * time.Second):
			// Unblock it: a writer that closes gives the reader EOF.
			if w, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
				w.Close()
			}
			t.Fatalf("specsAt(%s) blocked reading a FIFO", c.path)
		}
	}
}
