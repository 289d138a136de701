package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/manifold-mcp/manifold/internal/config"
)

// TestRestartNeeded: a reload that changes any key of [cluster] needs a
// restart, and the message never holds the Redis URL (it may carry a
// password); other changes do not.
func TestRestartNeeded(t *testing.T) {
	start := &config.Config{Cluster: config.Cluster{Redis: "redis://:pw@127.0.0.1:6379/0", KeyPrefix: "m:", Timeout: time.Second}}
	for _, tc := range []struct {
		name string
		edit func(*config.Config)
		want bool
	}{
		{"unchanged", func(*config.Config) {}, false},
		{"servers changed", func(c *config.Config) { c.Servers = []config.Server{{Name: "a"}} }, false},
		{"redis", func(c *config.Config) { c.Cluster.Redis = "redis://:other@127.0.0.1:6379/0" }, true},
		{"key_prefix", func(c *config.Config) { c.Cluster.KeyPrefix = "n:" }, true},
		{"on_error", func(c *config.Config) { c.Cluster.FailOpen = true }, true},
		{"timeout", func(c *config.Config) { c.Cluster.Timeout = 2 * time.Second }, true},
		{"removed", func(c *config.Config) { c.Cluster = config.Cluster{} }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := *start
			tc.edit(&now)
			got := restartNeeded(start, &now)
			if (got != "") != tc.want {
				t.Fatalf("restartNeeded = %q, want a message: %v", got, tc.want)
			}
			if bytes.Contains([]byte(got), []byte("pw")) || bytes.Contains([]byte(got), []byte("other")) {
				t.Errorf("restartNeeded shows the Redis URL: %q", got)
			}
		})
	}
}

// configMapLayout writes files as a new generation of a ConfigMap volume in
// dir: KEY -> ..data/KEY, ..data -> the generation, swapped atomically.
func configMapLayout(t *testing.T, dir, gen string, files map[string]string) {
	t.Helper()
	if err := os.Mkdir(filepath.Join(dir, gen), 0o755); err != nil {
		t.Fatal(err)
	}
	for k, v := range files {
		if err := os.WriteFile(filepath.Join(dir, gen, k), []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Lstat(filepath.Join(dir, k)); err != nil {
			if err := os.Symlink(filepath.Join("..data", k), filepath.Join(dir, k)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := os.Symlink(gen, filepath.Join(dir, "..data_tmp")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, "..data_tmp"), filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
}

// TestConfigSumSeesConfigMapSwap: the polled watch sees a ConfigMap's
// atomic ..data swap, of the config file and of a policy file matched by a
// glob, though no symlink that the config names changes.
func TestConfigSumSeesConfigMapSwap(t *testing.T) {
	dir := t.TempDir()
	path, globs := filepath.Join(dir, "proxy.toml"), []string{filepath.Join(dir, "policy-*.toml")}
	configMapLayout(t, dir, "..gen1", map[string]string{"proxy.toml": "a = 1\n", "policy-x.toml": "p = 1\n"})
	first := configSum(path, globs, nil)
	configMapLayout(t, dir, "..gen2", map[string]string{"proxy.toml": "a = 1\n", "policy-x.toml": "p = 2\n"})
	second := configSum(path, globs, nil)
	if bytes.Equal(first, second) {
		t.Error("configSum did not change when ..data was swapped to a generation with another policy file")
	}
	configMapLayout(t, dir, "..gen3", map[string]string{"proxy.toml": "a = 2\n", "policy-x.toml": "p = 2\n"})
	if bytes.Equal(second, configSum(path, globs, nil)) {
		t.Error("configSum did not change when ..data was swapped to a generation with another proxy.toml")
	}
}

// BenchmarkConfigSum is the cost of one poll of the watch (every second by
// default) for a config in a ConfigMap volume with two policy files: what
// an fsnotify watch would save.
func BenchmarkConfigSum(b *testing.B) {
	dir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "proxy.toml"), bytes.Repeat([]byte("# a line of config\n"), 200), 0o644); err != nil {
		b.Fatal(err)
	}
	for _, p := range []string{"policy-a.toml", "policy-b.toml"} {
		if err := os.WriteFile(filepath.Join(dir, p), bytes.Repeat([]byte("# a rule\n"), 100), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	path, globs := filepath.Join(dir, "proxy.toml"), []string{filepath.Join(dir, "policy-*.toml")}
	for b.Loop() {
		configSum(path, globs, nil)
	}
}
