package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// runCLI runs manifold with args in an empty folder, with no config in the
// environment, and returns its stdout, stderr and exit code.
func runCLI(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return runCLIIn(t, t.TempDir(), args...)
}

// runCLIIn is runCLI in the folder dir.
func runCLIIn(t *testing.T, dir string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	cmd := commandContext(ctx, manifoldBin, args...)
	cmd.Dir = dir
	cmd.Env = append(procEnviron(t), "MANIFOLD_CONFIG=", "XDG_CONFIG_HOME="+cmd.Dir)
	cmd.WaitDelay = 5 * time.Second
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("manifold %s did not finish within %s\nstderr:\n%s", strings.Join(args, " "), testTimeout, errb.String())
	}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		code = ee.ExitCode()
	default:
		t.Fatalf("run manifold %s: %v", strings.Join(args, " "), err)
	}
	if strings.Contains(errb.String(), "WARNING: DATA RACE") {
		t.Errorf("manifold %s reported a data race:\n%s", strings.Join(args, " "), errb.String())
	}
	return out.String(), errb.String(), code
}

func TestCLICheck(t *testing.T) {
	t.Parallel()
	t.Run("five problems", func(t *testing.T) {
		t.Parallel()
		// Each problem is on its own line; the line numbers are asserted.
		body := strings.Join([]string{
			`log_level = "loud"`,       // 1: not a level
			`startup_timeout = "soon"`, // 2: not a duration
			``,
			`[servers.alpha]`,
			`command = ` + tomlStr(fixtureBin),
			`prefx = "a"`, // 6: unknown key
			``,
			`[servers.beta]`,
			`url = "ftp://example.invalid/mcp"`, // 9: not http(s)
			``,
			`[servers.gamma]`,
			`command = ` + tomlStr(fixtureBin),
			`call_timeout = 5`, // 13: a duration needs a unit
		}, "\n") + "\n"
		path := writeConfig(t, body)
		stdout, stderr, code := runCLI(t, "check", "--config", path)
		if code != 1 {
			t.Errorf("check exited %d, want 1", code)
		}
		if !strings.Contains(stderr, "manifold: 5 problems:") {
			t.Errorf("check does not say there are 5 problems:\n%s", stderr)
		}
		for _, line := range []int{1, 2, 6, 9, 13} {
			if at := fmt.Sprintf("%s:%d:", path, line); !strings.Contains(stderr, at) {
				t.Errorf("check does not report a problem at %s:\n%s", at, stderr)
			}
		}
		if strings.Contains(stdout, "ok") {
			t.Errorf("check printed %q on stdout for a bad config", stdout)
		}
	})
	t.Run("good config", func(t *testing.T) {
		t.Parallel()
		path := writeConfig(t, twoFixtures())
		stdout, stderr, code := runCLI(t, "check", "--config", path)
		if code != 0 {
			t.Errorf("check exited %d, want 0\nstderr:\n%s", code, stderr)
		}
		for _, want := range []string{"ok, 2 servers", "alpha", "beta"} {
			if !strings.Contains(stdout, want) {
				t.Errorf("check stdout lacks %q:\n%s", want, stdout)
			}
		}
	})
}

func TestCLITools(t *testing.T) {
	t.Parallel()
	stdout, stderr, code := runCLI(t, "tools", "--config", writeConfig(t, twoFixtures()))
	if code != 0 {
		t.Fatalf("tools exited %d\nstderr:\n%s", code, stderr)
	}
	// Rows are EXPOSED KIND SERVER VERDICT DESCRIPTION, the description led
	// by the original name when the exposed one does not end in it.
	rows := make(map[string][]string)
	for line := range strings.Lines(stdout) {
		if f := strings.Fields(line); len(f) >= 4 {
			rows[f[0]] = f[1:3]
			if len(f) > 4 && strings.HasPrefix(f[4], "(") {
				rows[f[0]] = append(rows[f[0]], f[4])
			}
		}
	}
	for _, want := range [][]string{
		{"alpha__echo", "tool", "alpha"},
		{"beta__echo", "tool", "beta"},
		{"alpha__dotted_name", "tool", "alpha", "(dotted.name)"},
		{"alpha__greet", "prompt", "alpha"},
		{"beta__greet", "prompt", "beta"},
	} {
		if diff := cmp.Diff(want[1:], rows[want[0]]); diff != "" {
			t.Errorf("tools row %s (-want +got):\n%s\nstdout:\n%s", want[0], diff, stdout)
		}
	}
	if strings.Contains(stdout, "server \"") {
		t.Errorf("tools reports a server that is not up:\n%s", stdout)
	}
}

func TestCLICall(t *testing.T) {
	t.Parallel()
	path := writeConfig(t, twoFixtures())
	tests := []struct {
		name       string
		args       []string
		wantStdout string
		wantCode   int
	}{
		{name: "echo", args: []string{"alpha__echo", `{"message":"hi"}`}, wantStdout: "alpha: hi\n"},
		{name: "other server", args: []string{"beta__whoami"}, wantStdout: "beta\n"},
		{name: "tool error", args: []string{"alpha__fail"}, wantStdout: "alpha: failed on purpose\n", wantCode: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			stdout, stderr, code := runCLI(t, append([]string{"call", "--config", path}, tt.args...)...)
			if code != tt.wantCode {
				t.Errorf("call exited %d, want %d\nstderr:\n%s", code, tt.wantCode, stderr)
			}
			if stdout != tt.wantStdout {
				t.Errorf("call printed %q, want %q", stdout, tt.wantStdout)
			}
		})
	}
}

func TestCLIVersionAndHelp(t *testing.T) {
	t.Parallel()
	stdout, _, code := runCLI(t, "version")
	if code != 0 || !strings.HasPrefix(stdout, "manifold ") || len(strings.TrimSpace(stdout)) <= len("manifold") {
		t.Errorf("version = %q, exit %d; want \"manifold VERSION\", exit 0", stdout, code)
	}
	tests := []struct {
		args []string
		want string // in stdout or stderr
	}{
		{args: []string{"--help"}, want: "Usage:"},
		{args: []string{"help"}, want: "Usage:"},
		{args: []string{"serve", "--help"}, want: "Usage: manifold serve"},
		{args: []string{"check", "--help"}, want: "Usage: manifold check"},
		{args: []string{"tools", "--help"}, want: "Usage: manifold tools"},
		{args: []string{"call", "--help"}, want: "Usage: manifold call"},
		{args: []string{"version", "--help"}, want: "manifold"},
	}
	for _, tt := range tests {
		stdout, stderr, code := runCLI(t, tt.args...)
		if code != 0 {
			t.Errorf("manifold %s exited %d, want 0", strings.Join(tt.args, " "), code)
		}
		if !strings.Contains(stdout+stderr, tt.want) {
			t.Errorf("manifold %s printed no %q:\n%s%s", strings.Join(tt.args, " "), tt.want, stdout, stderr)
		}
	}
}
