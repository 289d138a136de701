package earlystart

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/manifold-mcp/manifold/internal/config"
	"github.com/manifold-mcp/manifold/internal/spawn/prestart"
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
		{[]string{prestart.ReaperArg}, "", false},
		{nil, "", false},
	} {
		path, ok := serveConfig(c.args)
		if path != c.path || ok != c.ok {
			t.Errorf("serveConfig(%q) = %q, %v; want %q, %v", c.args, path, ok, c.path, c.ok)
		}
	}
}

// specsOf is what the proxy starts at once for cfg, with the spawn
// arguments it gives each (upstream's options): the reference the early
// start must agree with.
func specsOf(cfg *config.Config) []prestart.Spec {
	var out []prestart.Spec
	for _, s := range cfg.Servers {
		if s.Command != "" && !s.Lazy && !s.PerSession && !s.PerIdentity {
			out = append(out, prestart.Spec{Command: s.Command, Args: s.Args, Env: s.EnvList(), Dir: s.Cwd})
		}
	}
	return out
}

func sameSpec(a, b prestart.Spec) bool {
	return a.Command == b.Command && a.Dir == b.Dir && slices.Equal(a.Args, b.Args) && slices.Equal(a.Env, b.Env)
}

func sortSpecs(s []prestart.Spec) []prestart.Spec {
	s = slices.Clone(s)
	slices.SortFunc(s, func(a, b prestart.Spec) int {
		return strings.Compare(fmt.Sprint(a), fmt.Sprint(b))
	})
	return s
}

// TestSpecsAgreeWithConfig: for configs that internal/config reads, the
// servers started early are exactly the ones the proxy starts at once,
// with the spawn arguments it gives them (the env sorted by key, ${VAR}s
// expanded, commands and folders resolved against the config's folder): not
// lazy ones, remote ones, disabled ones, or those started per session or
// per identity. Tables written every way TOML allows; the repository's
// proxy.toml too.
func TestSpecsAgreeWithConfig(t *testing.T) {
	repo, err := os.ReadFile(filepath.Join(testRoot(t), "proxy.toml"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	t.Setenv("MANIFOLD_TEST_TOKEN", "tok-123")
	t.Setenv("MANIFOLD_TEST_EMPTY", "")
	t.Chdir(dir)
	cases := map[string]string{
		"kinds": `
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

[servers.now]
command = "cat"
start = "eager"
isolation = "shared"

[servers.remote]
url = "http://127.0.0.1:1/mcp"

[servers.mine]
command = "cat"
isolation = "session"

[servers.yours]
command = "cat"
isolation = "identity"

[servers.off]
command = "cat"
disabled = true

[servers.on]
command = "cat"
args = []
disabled = false
`,
		"paths": `
version = 1
[servers.rel]
command = "./bin/../bin/server"
cwd = "work/./sub"

[servers.up]
command = "../x/server"
cwd = "../elsewhere"

[servers.abs]
command = "/usr/bin/../bin/cat"
cwd = "/tmp/../tmp"
`,
		"references": `
[servers.tok]
command = "cat"
args = ["--token", "${MANIFOLD_TEST_TOKEN}", "$$literal", "a$b", "${env:MANIFOLD_TEST_TOKEN}"]
env = { TOKEN = "${MANIFOLD_TEST_TOKEN}", HOME2 = "${MANIFOLD_TEST_UNSET:-/home/none}", E = "${MANIFOLD_TEST_EMPTY:-dflt}" }
cwd = "${MANIFOLD_TEST_UNSET:-sub}"
`,
		"spellings": "\uFEFF" + `# a comment [servers.no]
servers.dotted.command = "cat"
servers.dotted.args = ["a", 'b']

[servers."quoted"]
command = 'cat'
env.X = "1"

[servers.sub]
command = """cat"""

[servers.sub.env]
Z = "z"
A = "a"
`,
		"inline": `servers = { one = { command = "cat", args = ["x"] }, two = { url = "http://127.0.0.1:1/" } }` + "\n",
	}
	cases["repository proxy.toml"] = string(repo)
	for name, body := range cases {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, "proxy.toml")
			if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
			cfg, err := config.Parse(path, []byte(body))
			if err != nil {
				t.Fatal(err)
			}
			want := sortSpecs(specsOf(cfg))
			got := sortSpecs(specs(path, []byte(body)))
			if len(want) == 0 || !slices.EqualFunc(got, want, sameSpec) {
				t.Errorf("started early:\n%+v\nthe proxy starts:\n%+v", got, want)
			}
			// A relative path to the config gives the same.
			if rel := sortSpecs(specs("proxy.toml", []byte(body))); !slices.EqualFunc(rel, want, sameSpec) {
				t.Errorf("with a relative path, started early:\n%+v\nthe proxy starts:\n%+v", rel, want)
			}
		})
	}
}

// TestSpecsLeaveToProxy: what the early start cannot read exactly as
// internal/config does is left to the proxy: a server with a ${file:}
// reference or an unset variable without default, one whose keys have
// other types; the whole file when it is not TOML, nested too deep, of
// another version, or named as a file descriptor.
func TestSpecsLeaveToProxy(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "proxy.toml")
	ok := "[servers.ok]\ncommand = \"cat\"\n"
	for name, c := range map[string]struct {
		body string
		want int
	}{
		"file reference":     {ok + "[servers.f]\ncommand = \"cat\"\nenv = { T = \"${file:token}\" }\n", 1},
		"unset variable":     {ok + "[servers.u]\ncommand = \"cat\"\nargs = [\"${MANIFOLD_TEST_NEVER_SET}\"]\n", 1},
		"bad reference":      {ok + "[servers.u]\ncommand = \"${1}\"\n", 1},
		"args not strings":   {ok + "[servers.a]\ncommand = \"cat\"\nargs = [1]\n", 1},
		"args a string":      {ok + "[servers.a]\ncommand = \"cat\"\nargs = \"-u\"\n", 1},
		"env not a table":    {ok + "[servers.e]\ncommand = \"cat\"\nenv = [\"A=1\"]\n", 1},
		"command not string": {ok + "[servers.c]\ncommand = [\"cat\"]\n", 1},
		"empty command":      {ok + "[servers.c]\ncommand = \"\"\n", 1},
		"disabled not bool":  {ok + "[servers.d]\ncommand = \"cat\"\ndisabled = \"yes\"\n", 1},
		"unknown start":      {ok + "[servers.s]\ncommand = \"cat\"\nstart = \"soon\"\n", 1},
		"not TOML":           {ok + "[servers.x\n", 0},
		"version 2":          {"version = 2\n" + ok, 0},
		"too deep":           {ok + "x = " + strings.Repeat("[", 65) + strings.Repeat("]", 65) + "\n", 0},
	} {
		got := specs(path, []byte(c.body))
		if len(got) != c.want {
			t.Errorf("%s: started early %+v, want %d", name, got, c.want)
		}
	}
	if got := specs("/dev/fd/3", []byte(ok)); got != nil {
		t.Errorf("a config named as a file descriptor: started early %+v", got)
	}
}

// testRoot is the repository's root.
func testRoot(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for d := wd; d != "/"; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d
		}
	}
	t.Fatal("no go.mod above " + wd)
	return ""
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
		got := make(chan []prestart.Spec, 1)
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

// TestReadRegularDoesNotWait: a FIFO found where the config was checked to
// be a regular file (replaced in between) is opened without waiting for a
// writer, and not read; a regular file is read whole.
func TestReadRegularDoesNotWait(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	done := make(chan bool, 1)
	go func() {
		_, ok := readRegular(fifo)
		done <- ok
	}()
	select {
	case ok := <-done:
		if ok {
			t.Error("readRegular read a FIFO")
		}
	case <-time.After(10 * time.Second):
		if w, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
			w.Close()
		}
		t.Fatal("readRegular waited for the FIFO's writer")
	}
	regular := filepath.Join(dir, "proxy.toml")
	body := strings.Repeat("# a long comment line\n", 10_000)
	if err := os.WriteFile(regular, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	if data, ok := readRegular(regular); !ok || string(data) != body {
		t.Errorf("readRegular(regular file) = %d bytes, %v; want %d", len(data), ok, len(body))
	}
}
