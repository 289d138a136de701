//go:build unix

package config

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// TestLoadReadOnce: a config read from a pipe (--config <(…)) is marked
// ReadOnce, and has no lock file unless lock_file names one (a pipe has
// none of its own); a config from a regular file is neither.
func TestLoadReadOnce(t *testing.T) {
	const servers = "[servers.s]\ncommand = \"srv\"\n"
	dir := t.TempDir()
	fromPipe := func(t *testing.T, content string) *Config {
		t.Helper()
		fifo := filepath.Join(dir, "fifo-"+strings.ReplaceAll(t.Name(), "/", "-"))
		if err := syscall.Mkfifo(fifo, 0o600); err != nil {
			t.Fatal(err)
		}
		written := make(chan error, 1)
		go func() {
			f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
			if err != nil {
				written <- err
				return
			}
			_, err = f.WriteString(content)
			written <- errors.Join(err, f.Close())
		}()
		cfg, err := Load(fifo)
		if err != nil {
			t.Fatal(err)
		}
		if err := <-written; err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	t.Run("pipe", func(t *testing.T) {
		cfg := fromPipe(t, servers)
		if !cfg.ReadOnce || cfg.LockFile != "" {
			t.Errorf("ReadOnce %v, LockFile %q; want true and none", cfg.ReadOnce, cfg.LockFile)
		}
	})
	t.Run("pipe with lock_file", func(t *testing.T) {
		lock := filepath.Join(dir, "approved.lock")
		cfg := fromPipe(t, "lock_file = \""+lock+"\"\n"+servers)
		if !cfg.ReadOnce || cfg.LockFile != lock {
			t.Errorf("ReadOnce %v, LockFile %q; want true and %q", cfg.ReadOnce, cfg.LockFile, lock)
		}
	})
	t.Run("file", func(t *testing.T) {
		path := filepath.Join(dir, "proxy.toml")
		if err := os.WriteFile(path, []byte(servers), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg, err := Load(path)
		if err != nil {
			t.Fatal(err)
		}
		if want := filepath.Join(dir, DefaultLockFile); cfg.ReadOnce || cfg.LockFile != want {
			t.Errorf("ReadOnce %v, LockFile %q; want false and %q", cfg.ReadOnce, cfg.LockFile, want)
		}
	})
}

// TestBaseDir: the names of file descriptors (a config given as
// --config <(…) or through standard input) resolve against the working
// directory; every other name, its own folder.
func TestBaseDir(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ abs, want string }{
		{"/dev/fd/63", wd},
		{"/dev/stdin", wd},
		{"/proc/self/fd/3", wd},
		{"/proc/4242/fd/0", wd},
		{"/dev/null", "/dev"},
		{"/home/u/proxy.toml", "/home/u"},
		{"/proc/fd/x", "/proc/fd"},
		{"/srv/proc/self/fd/3", "/srv/proc/self/fd"},
		{"/etc/manifold/fd/proxy.toml", "/etc/manifold/fd"},
	} {
		if got := baseDir(tt.abs); got != tt.want {
			t.Errorf("baseDir(%q) = %q, want %q", tt.abs, got, tt.want)
		}
	}
}

// TestLoadDescriptor: a config named by a file descriptor (/dev/fd/N, as
// the shell passes --config <(…)) resolves its relative paths against the
// working directory, not /dev/fd: its policy file is found there, and a
// stdio server without cwd runs there (in /dev/fd it would run in
// /proc/PID/fd). A named pipe keeps its own folder.
func TestLoadDescriptor(t *testing.T) {
	t.Chdir(t.TempDir())
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	policyName := "policy.toml"
	if err := os.WriteFile(filepath.Join(wd, policyName), []byte("[rules.no_echo]\nmatch = \"s__echo\"\ndeny = true\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	content := "policy_files = [\"" + policyName + "\"]\n[servers.s]\ncommand = \"./bin/srv\"\n"
	if _, err := w.WriteString(content); err != nil { // far less than a pipe holds
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load("/dev/fd/" + strconv.Itoa(int(r.Fd())))
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if cfg.Dir != wd || !cfg.ReadOnce || cfg.LockFile != "" {
		t.Errorf("Dir %q, ReadOnce %v, LockFile %q; want %q, true, none", cfg.Dir, cfg.ReadOnce, cfg.LockFile, wd)
	}
	if len(cfg.Servers) != 1 || cfg.Servers[0].Cwd != wd || cfg.Servers[0].Command != filepath.Join(wd, "bin/srv") {
		t.Errorf("servers %+v; want one, run in %q as %q", cfg.Servers, wd, filepath.Join(wd, "bin/srv"))
	}
	if want := []string{filepath.Join(wd, policyName)}; !slices.Equal(cfg.PolicyFiles, want) {
		t.Errorf("policy files %q, want %q", cfg.PolicyFiles, want)
	}

	dir := t.TempDir()
	fifo := filepath.Join(dir, "proxy.toml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	go func() {
		// Opening blocks until Load opens the other end; a failed Load
		// fails the test, whose end removes the pipe.
		if f, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
			_, _ = f.WriteString("[servers.s]\ncommand = \"srv\"\n")
			_ = f.Close()
		}
	}()
	named, err := Load(fifo)
	if err != nil {
		t.Fatal(err)
	}
	if named.Dir != dir || named.Servers[0].Cwd != dir {
		t.Errorf("a named pipe: Dir %q, server cwd %q; want its folder %q", named.Dir, named.Servers[0].Cwd, dir)
	}
}
