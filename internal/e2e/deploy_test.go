package e2e

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// configMapVolume lays files out as the kubelet does in a ConfigMap volume
// (its AtomicWriter): each generation in a folder of its own named after a
// time stamp, "..data" a symlink to the current one, and every key a
// symlink "KEY -> ..data/KEY". A new generation is written in full, then
// "..data" is swapped atomically (a symlink "..data_tmp" renamed over it),
// then the keys' symlinks are added or removed and the old generation is
// deleted.
type configMapVolume struct {
	t    *testing.T
	dir  string
	gen  int
	cur  string   // the current generation's folder
	keys []string // the keys of the current generation
}

func newConfigMapVolume(t *testing.T) *configMapVolume {
	return &configMapVolume{t: t, dir: t.TempDir()}
}

// path is where a key is seen, as a pod sees it.
func (v *configMapVolume) path(key string) string { return filepath.Join(v.dir, key) }

// publish makes files (key → content) the volume's new generation.
func (v *configMapVolume) publish(files map[string]string) {
	t := v.t
	t.Helper()
	v.gen++
	name := fmt.Sprintf("..2026_12_01_23_59_%02d.%09d", v.gen, 100000000+v.gen)
	if err := os.Mkdir(filepath.Join(v.dir, name), 0o755); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for key, body := range files {
		if err := os.WriteFile(filepath.Join(v.dir, name, key), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, key)
	}
	tmp := filepath.Join(v.dir, "..data_tmp")
	if err := os.Symlink(name, tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(v.dir, "..data")); err != nil {
		t.Fatal(err)
	}
	for _, key := range keys {
		if _, err := os.Lstat(v.path(key)); errors.Is(err, os.ErrNotExist) {
			if err := os.Symlink(filepath.Join("..data", key), v.path(key)); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, key := range v.keys {
		if !slices.Contains(keys, key) {
			if err := os.Remove(v.path(key)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if v.cur != "" {
		if err := os.RemoveAll(filepath.Join(v.dir, v.cur)); err != nil {
			t.Fatal(err)
		}
	}
	v.cur, v.keys = name, keys
}

// TestConfigMapReload: manifold serve --http with --config in a ConfigMap
// volume (issue 16 item 2). A new generation swapped in by the "..data"
// symlink with a policy file that denies a tool hides it (and refuses a
// call by name); a generation with a broken policy file, then one with a
// broken proxy.toml, are refused with the file and line of the problem
// while the generation in force keeps serving; a good generation after
// them is applied again.
func TestConfigMapReload(t *testing.T) {
	t.Parallel()
	vol := newConfigMapVolume(t)
	proxyToml := withListWait("policy_files = [\"policy-*.toml\"]\n" + fixture("alpha", nil))
	allow := "[rules.other]\nmatch = \"nothing__here\"\ndeny = true\n"
	denyEcho := "[rules.no_echo]\nmatch = \"alpha__echo\"\ndeny = true\nreason = \"not in this deployment\"\n"
	vol.publish(map[string]string{"proxy.toml": proxyToml, "policy-main.toml": allow})
	if fi, err := os.Lstat(vol.path("proxy.toml")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("proxy.toml of the volume is not a symlink: %v, %v", fi, err)
	}

	hp := startHTTP(t, vol.path("proxy.toml"))
	cs := connectHTTP(t, hp)
	ctx := testCtx(t)
	if names := toolNames(listTools(ctx, t, cs)); !slices.Contains(names, "alpha__echo") {
		t.Fatalf("alpha__echo not listed at start: %v", names)
	}

	// A generation that denies alpha__echo.
	vol.publish(map[string]string{"proxy.toml": proxyToml, "policy-main.toml": denyEcho})
	waitFor(t, 20*time.Second, "alpha__echo hidden after the ..data swap", func() bool {
		return !slices.Contains(toolNames(listTools(ctx, t, cs)), "alpha__echo")
	})
	refused := func(when string) {
		t.Helper()
		if e := callRPCError(ctx, t, cs, "alpha__echo", map[string]any{"message": "x"}); e.Code != -32602 {
			t.Errorf("%s: call of the denied alpha__echo: %v, want JSON-RPC -32602 (as an unknown tool)", when, e)
		}
	}
	refused("after the swap")
	if got := text(call(ctx, t, cs, "alpha__pid", nil)); got == "" {
		t.Error("alpha__pid answered nothing after the swap")
	}

	// A generation whose policy file does not parse: refused with its line.
	vol.publish(map[string]string{"proxy.toml": proxyToml, "policy-main.toml": "[rules.no_echo]\nmatch = \"alpha__echo\"\ndeny = tru\n"})
	waitFor(t, 20*time.Second, "the broken policy file refused with its line", func() bool {
		return strings.Contains(hp.stderr.String(), "policy-main.toml:3:8: invalid TOML")
	})
	refused("after a broken policy file")

	// A generation whose proxy.toml has an unknown key: refused with its line.
	broken := proxyToml + "\n[servers.beta]\ncomand = \"x\"\n"
	line := strings.Count(broken, "\n") // comand is the last line
	vol.publish(map[string]string{"proxy.toml": broken, "policy-main.toml": allow})
	want := fmt.Sprintf("%s:%d:1: servers.beta.comand: unknown key", vol.path("proxy.toml"), line)
	waitFor(t, 20*time.Second, "the broken proxy.toml refused with its line", func() bool {
		return strings.Contains(hp.stderr.String(), want)
	})
	refused("after a broken proxy.toml")

	// A good generation is applied again: alpha__echo is back.
	vol.publish(map[string]string{"proxy.toml": proxyToml, "policy-main.toml": allow})
	waitFor(t, 20*time.Second, "alpha__echo listed again", func() bool {
		return slices.Contains(toolNames(listTools(ctx, t, cs)), "alpha__echo")
	})
	if got := text(call(ctx, t, cs, "alpha__echo", map[string]any{"message": "back"})); got != "alpha: back" {
		t.Errorf("alpha__echo = %q, want %q", got, "alpha: back")
	}
}

// TestClusterReloadNeedsRestart: a reload that changes [cluster] is not
// applied (the shared store is read at start only); it says so in the log
// and in `manifold status`, the rest of the reload is applied, and a reload
// that puts [cluster] back as it was clears the notice.
func TestClusterReloadNeedsRestart(t *testing.T) {
	t.Parallel()
	// A Redis on a port nothing listens on: the outage is logged, not fatal.
	redis := "redis://" + freePort(t) + "/0"
	cluster := func(prefix string) string {
		return "\n[cluster]\nredis = " + tomlStr(redis) + "\nkey_prefix = " + tomlStr(prefix) + "\nkey = " + tomlStr(clusterKey) + "\n"
	}
	body := fixture("alpha", nil) + cluster("e2e:")
	cfg := writeConfig(t, body)
	hp := startHTTP(t, cfg)
	cs := connectHTTP(t, hp)
	ctx := testCtx(t)
	listTools(ctx, t, cs)

	status := func() string {
		out, _ := commandContext(ctx, manifoldBin, "status", "--config", cfg).Output()
		return string(out)
	}
	waitFor(t, 10*time.Second, "the instance in manifold status", func() bool {
		return strings.Contains(status(), fmt.Sprintf("manifold pid %d", hp.pid()))
	})
	if s := status(); strings.Contains(s, "restart needed") {
		t.Fatalf("status says restart needed before any reload:\n%s", s)
	}

	// [cluster] changes, and so does a server (beta comes).
	changed := withListWait(fixture("alpha", nil) + fixture("beta", nil) + cluster("other:"))
	if err := os.WriteFile(cfg, []byte(changed), 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "beta listed after the reload", func() bool {
		return slices.Contains(toolNames(listTools(ctx, t, cs)), "beta__echo")
	})
	waitFor(t, 10*time.Second, "restart needed in the log", func() bool {
		return strings.Contains(hp.stderr.String(), "reload: restart needed: [cluster] changed since start")
	})
	waitFor(t, 10*time.Second, "restart needed in manifold status", func() bool {
		return strings.Contains(status(), "restart needed: [cluster] changed since start")
	})

	// [cluster] as at start again: the notice goes.
	if err := os.WriteFile(cfg, []byte(withListWait(fixture("alpha", nil)+fixture("beta", nil)+cluster("e2e:"))), 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "no restart needed after [cluster] is back", func() bool {
		return strings.Contains(hp.stderr.String(), "no restart needed") && !strings.Contains(status(), "restart needed")
	})
}
