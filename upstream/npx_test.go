package upstream

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

func TestNpxPackages(t *testing.T) {
	tests := []struct {
		command string
		args    []string
		want    []string
	}{
		{"npx", []string{"-y", "@modelcontextprotocol/server-memory@2026.8.31"}, []string{"@modelcontextprotocol/server-memory@2026.8.31"}},
		{"/usr/bin/npx", []string{"--yes", "pkg", "-y", "--flag-of-the-server"}, []string{"pkg"}},
		{"npx", []string{"-y", "-p", "a@1", "--package=b", "cmd", "x"}, []string{"a@1", "b"}},
		{"npm", []string{"exec", "--yes", "--", "pkg@2", "arg"}, []string{"pkg@2"}},
		{"npm", []string{"x", "pkg"}, []string{"pkg"}},
		{"npx", []string{"-c", "echo hi"}, nil},
		{"npm", []string{"run", "serve"}, nil},
		{"node", []string{"server.js"}, nil},
	}
	for _, tc := range tests {
		if got := npxPackages(tc.command, tc.args); !slices.Equal(got, tc.want) {
			t.Errorf("npxPackages(%s %q) = %q, want %q", tc.command, tc.args, got, tc.want)
		}
	}
}

// The folder is the one npm 11's libnpmexec made for this package (seen in
// its own error output, below).
func TestNpxInstallDir(t *testing.T) {
	cache := t.TempDir()
	got := npxInstallDir("npx", []string{"-y", "@modelcontextprotocol/server-memory@2026.8.31"}, []string{"npm_config_cache=" + cache})
	if want := filepath.Join(cache, "_npx", "c98ccc168155bafa"); got != want {
		t.Errorf("npxInstallDir = %q, want %q", got, want)
	}
	if got := npxInstallDir("npx", []string{"./local"}, nil); got != "" {
		t.Errorf("npxInstallDir of a local folder = %q, want none", got)
	}
	if got := npxInstallDir("node", []string{"x.js"}, nil); got != "" {
		t.Errorf("npxInstallDir of node = %q, want none", got)
	}
}

// npm's and node's own words for the two forms of a half-written npx
// install, as printed on 2026-12-07 (npm 11.19.1, node 20.20.2).
const (
	enoentTail = `npm error code ENOENT
npm error syscall open
npm error path /home/u/.npm/_npx/c98ccc168155bafa/package.json
npm error errno -2
npm error enoent Could not read package.json: Error: ENOENT: no such file or directory, open '/home/u/.npm/_npx/c98ccc168155bafa/package.json'
npm error enoent This is related to npm not being able to find a file.
npm error enoent
npm error A complete log of this run can be found in: /home/u/.npm/_logs/2026-12-07T17_55_08_909Z-debug-0.log`
	moduleTail = `node:internal/modules/esm/resolve:873
Error [ERR_MODULE_NOT_FOUND]: Cannot find package 'zod' imported from /home/u/.npm/_npx/5a9d879542beca3a/node_modules/@modelcontextprotocol/sdk/dist/esm/server/index.js`
)

func TestNpxCacheHint(t *testing.T) {
	tests := []struct {
		name, dir, command, stderr string
		want                       []string // substrings; none: no hint
	}{
		{"no package.json", "", "npx", enoentTail,
			[]string{"/home/u/.npm/_npx/c98ccc168155bafa has a node_modules but no package.json", "(rm -rf /home/u/.npm/_npx/c98ccc168155bafa)"}},
		{"missing package", "", "npx", moduleTail,
			[]string{"/home/u/.npm/_npx/5a9d879542beca3a is incomplete", "(rm -rf /home/u/.npm/_npx/5a9d879542beca3a)"}},
		{"no package.json, folder computed", "/c/_npx/0123456789abcdef", "npx",
			"npm error enoent Could not read package.json: Error: ENOENT: no such file or directory",
			[]string{"/c/_npx/0123456789abcdef has a node_modules but no package.json", "(rm -rf /c/_npx/0123456789abcdef)"}},
		{"missing module, folder unknown", "", "npx", "Error: Cannot find module 'x'", []string{"rm -rf ~/.npm/_npx"}},
		{"npm in a project of the user's", "", "npm", "npm error enoent Could not read package.json: Error: ENOENT", nil},
		{"another failure", "/c/_npx/0123456789abcdef", "npx", "Error: listen EADDRINUSE", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := npxCacheHint(tc.dir, tc.command, tc.stderr)
			if len(tc.want) == 0 && got != "" {
				t.Errorf("hint = %q, want none", got)
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("hint = %q, want it to contain %q", got, w)
				}
			}
		})
	}
}

// TestNpxCorruptCacheNamed: a server started by npx whose cached install
// has a node_modules but no package.json fails with the folder to delete;
// the npx here is a stand-in that fails as npm 11 does (exit 254).
func TestNpxCorruptCacheNamed(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("a shell script stands in for npx")
	}
	bin := t.TempDir()
	cache := t.TempDir()
	script := "#!/bin/sh\ndir=\"$npm_config_cache/_npx/c98ccc168155bafa\"\n" +
		"echo \"npm error code ENOENT\" >&2\n" +
		"echo \"npm error enoent Could not read package.json: Error: ENOENT: no such file or directory, open '$dir/package.json'\" >&2\n" +
		"exit 254\n"
	if err := os.WriteFile(filepath.Join(bin, "npx"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := Start(t.Context(), Options{
		Name:    "memory",
		Command: filepath.Join(bin, "npx"),
		Args:    []string{"-y", "@modelcontextprotocol/server-memory@2026.8.31"},
		Env:     []string{"npm_config_cache=" + cache},
	})
	dir := filepath.Join(cache, "_npx", "c98ccc168155bafa")
	if err == nil || !strings.Contains(err.Error(), "exited with status 254") || !strings.Contains(err.Error(), "(rm -rf "+dir+")") {
		t.Errorf("Start: %v; want exit 254 and the folder to delete, %s", err, dir)
	}
}

// TestStopWaitsForNpxInstall: a server whose npx is still installing it
// when its start is given up (the client quit) is not signalled: its stdin
// closes, and the install finishes (npm writes package.json last) before
// the process exits by itself. The npx here is a stand-in that "installs"
// for a second, ignoring its stdin as npm does, then runs the fixture.
func TestStopWaitsForNpxInstall(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("a shell script stands in for npx")
	}
	bin := t.TempDir()
	cache := t.TempDir()
	dir := filepath.Join(cache, "_npx", "c98ccc168155bafa")
	script := "#!/bin/sh\nmkdir -p \"" + dir + "/node_modules\"\nsleep 1\necho '{}' > \"" + dir + "/package.json\"\nexec \"$FIXTURE\"\n"
	if err := os.WriteFile(filepath.Join(bin, "npx"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	opts := fixtureOptions(t, "serve")
	opts.Command = filepath.Join(bin, "npx")
	opts.Args = []string{"-y", "@modelcontextprotocol/server-memory@2026.8.31"}
	opts.Env = append(opts.Env, "npm_config_cache="+cache, "FIXTURE="+os.Args[0])
	opts.StopGrace = 100 * time.Millisecond // the old stop sequence signalled it within 0.2 s
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		// The client quits while npx installs.
		for range 500 {
			if _, err := os.Stat(filepath.Join(dir, "node_modules")); err == nil {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		cancel()
	}()
	_, err := Start(ctx, opts)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Start: %v, want it cancelled", err)
	}
	if !npxInstalled(dir) {
		t.Errorf("the install was interrupted: %s has no package.json", dir)
	}
}

// TestStartDeadlineWaitsForNpxInstall: a start's deadline does not count
// the time npx spends installing the server; once the install is over
// (package.json written) the server has its startup timeout again; a
// command that is not npx gets its startup timeout; an install that never
// ends is bounded.
func TestStartDeadlineWaitsForNpxInstall(t *testing.T) {
	const d = 2 * time.Second
	run := func(t *testing.T, npxDir string, during func()) time.Duration {
		var took time.Duration
		synctest.Test(t, func(t *testing.T) {
			c := &child{npxDir: npxDir, log: slog.New(slog.DiscardHandler)}
			began := time.Now()
			expired := make(chan struct{})
			stop := c.startDeadline(d, func() { close(expired) })
			defer stop()
			go during()
			<-expired
			took = time.Since(began)
		})
		return took
	}
	t.Run("not npx", func(t *testing.T) {
		if took := run(t, "", func() {}); took != d {
			t.Errorf("expired after %v, want the startup timeout %v", took, d)
		}
	})
	t.Run("installing for 9.5s", func(t *testing.T) {
		dir := t.TempDir()
		took := run(t, dir, func() {
			time.Sleep(9500 * time.Millisecond)
			if err := os.WriteFile(filepath.Join(dir, "package.json"), []byte("{}"), 0o644); err != nil {
				t.Error(err)
			}
		})
		// Seen installed at the first check after it (each second from
		// 2 s on: at 10 s), then d more.
		if want := 10*time.Second + d; took != want {
			t.Errorf("expired after %v, want %v (the install, then the startup timeout)", took, want)
		}
	})
	t.Run("installing for ever", func(t *testing.T) {
		if took := run(t, t.TempDir(), func() {}); took != npxStartBound {
			t.Errorf("expired after %v, want the bound %v", took, npxStartBound)
		}
	})
}
