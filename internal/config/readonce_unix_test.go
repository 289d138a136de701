//go:build unix

package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestLoadReadOnce: a config read from a pipe (--config <(…)) is marked
// ReadOnce, and has no lock file unless lock_file names one (its folder,
// /dev/fd, holds none); a config from a regular file is neither.
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
