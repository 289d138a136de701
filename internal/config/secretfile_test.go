package config

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestFileAndEnvReferences: ${file:PATH} reads a secret from a file (relative
// to the config's folder, one trailing newline dropped) and ${env:NAME} from
// the environment, in any string; both values are secrets, and so is a
// ${env:} value that looks like a path.
func TestFileAndEnvReferences(t *testing.T) {
	dir := t.TempDir()
	writeSecret(t, filepath.Join(dir, "token"), "file-secret-1\n")
	writeSecret(t, filepath.Join(dir, "crlf"), "file-secret-2\r\n")
	writeSecret(t, filepath.Join(dir, "two"), "file-secret-3\n\n")
	abs := filepath.Join(t.TempDir(), "abs-token")
	writeSecret(t, abs, "file-secret-4")
	doc := `
[servers.remote]
url = "https://example.invalid/mcp"
headers = { Authorization = "Bearer ${file:token}", X-Other = "${file:` + abs + `}" }

[servers.local]
command = "server"
args = ["--key", "${file:./crlf}", "${env:ENV_TOKEN}"]
env = { TWO = "${file:two}", PATHISH = "${env:SECRET_PATH}", HOME = "${HOME}", DEF = "${env:UNSET:-dflt-value}" }
description = "uses ${file:token} here too"
`
	path := filepath.Join(dir, "proxy.toml")
	cfg, err := ParseEnv(path, []byte(doc), env(map[string]string{
		"ENV_TOKEN": "env-secret-1", "SECRET_PATH": "/s3cr3t/path", "HOME": "/home/someone",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := cfg.Servers[0].Headers["Authorization"], "Bearer file-secret-1"; got != want {
		t.Errorf("Authorization = %q, want %q", got, want)
	}
	if got, want := cfg.Servers[0].Headers["X-Other"], "file-secret-4"; got != want {
		t.Errorf("X-Other = %q, want %q", got, want)
	}
	if diff := cmp.Diff([]string{"--key", "file-secret-2", "env-secret-1"}, cfg.Servers[1].Args); diff != "" {
		t.Errorf("args (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"TWO": "file-secret-3\n", "PATHISH": "/s3cr3t/path", "HOME": "/home/someone", "DEF": "dflt-value"}, cfg.Servers[1].Env); diff != "" {
		t.Errorf("env (-want +got):\n%s", diff)
	}
	if got, want := cfg.Servers[1].Description, "uses file-secret-1 here too"; got != want {
		t.Errorf("description = %q, want %q", got, want)
	}
	want := []string{"/s3cr3t/path", "Bearer file-secret-1", "env-secret-1", "file-secret-1", "file-secret-2", "file-secret-3\n", "file-secret-4"}
	if diff := cmp.Diff(want, cfg.Secrets); diff != "" {
		t.Errorf("Secrets (-want +got):\n%s", diff)
	}
	wantFiles := []SecretFile{
		{Path: filepath.Join(dir, "token"), Key: "servers.remote.headers.Authorization"},
		{Path: abs, Key: "servers.remote.headers.X-Other"},
		{Path: filepath.Join(dir, "crlf"), Key: "servers.local.args"},
		{Path: filepath.Join(dir, "two"), Key: "servers.local.env.TWO"},
	}
	if diff := cmp.Diff(wantFiles, cfg.SecretFiles); diff != "" {
		t.Errorf("SecretFiles (-want +got):\n%s", diff)
	}
}

// TestFileReferenceErrors: a ${file:} that cannot be read is a config error
// that names the key, the file and the fix, never blocks (a FIFO, a device)
// and never shows what the file holds; a malformed reference says how to
// write one.
func TestFileReferenceErrors(t *testing.T) {
	dir := t.TempDir()
	writeSecret(t, filepath.Join(dir, "empty"), "\n")
	writeSecret(t, filepath.Join(dir, "big"), "big-secret-"+strings.Repeat("x", MaxSecretFileBytes))
	locked := filepath.Join(dir, "locked")
	writeSecret(t, locked, "locked-secret")
	if err := os.Chmod(locked, 0); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if runtime.GOOS != "windows" {
		if err := syscall.Mkfifo(fifo, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name, value string
		want        string // the problem, after "proxy.toml:3:1: servers.s.env.K: "
	}{
		{"missing", "${file:nope}", "${file:nope}: cannot read " + filepath.Join(dir, "nope") + ": no such file or directory; create it with the secret as its content, or fix the path"},
		{"empty", "${file:empty}", "${file:empty}: " + filepath.Join(dir, "empty") + " is empty; write the secret into it"},
		{"too big", "${file:big}", "${file:big}: " + filepath.Join(dir, "big") + " holds 65547 bytes, more than the 65536 bytes a secret file may hold, so it is not read; name the file that holds only the secret"},
		{"folder", "${file:.}", "${file:.}: " + dir + " is not a regular file (it is a folder), so it is not read; write the secret into a regular file and name that one"},
		{"no path", "x${file:}", `"${file:}" names no file; write the path of the file that holds the secret, like ${file:/run/secrets/token} or ${file:token} (relative to this file's folder)`},
		{"unknown scheme", "${vault:x}", `unknown reference "${vault:...}" in "${vault:x}"; write ${NAME} or ${env:NAME} for an environment variable, ${file:PATH} for a file that holds a secret, or "$$" for a literal "$"`},
		{"bad env name", "${env:A-B}", `invalid variable name "A-B" in "${env:A-B}"; use letters, digits and '_', not starting with a digit, or write "$$" for a literal "$"`},
		{"unset env", "${env:NOPE_X}", "environment variable NOPE_X is not set; set it, or write ${NOPE_X:-default} to fall back to a default"},
	}
	if runtime.GOOS != "windows" {
		tests = append(tests,
			struct{ name, value, want string }{"fifo", "${file:fifo}", "${file:fifo}: " + fifo + " is not a regular file (it is a named pipe), so it is not read; write the secret into a regular file and name that one"},
			struct{ name, value, want string }{"device", "${file:/dev/zero}", "${file:/dev/zero}: /dev/zero is not a regular file (it is a device), so it is not read; write the secret into a regular file and name that one"},
		)
		if os.Geteuid() != 0 {
			tests = append(tests, struct{ name, value, want string }{"unreadable", "${file:locked}", "${file:locked}: cannot read " + locked + ": permission denied; make it readable by the user that runs manifold (and no one else: chmod 600)"})
		}
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := "\n[servers.s]\ncommand = \"server\"\nenv = { K = \"" + strings.ReplaceAll(tt.value, `\`, `\\`) + "\" }\nrequired = true\n"
			done := make(chan error, 1)
			go func() {
				_, err := ParseEnv(filepath.Join(dir, "proxy.toml"), []byte(doc), env(nil))
				done <- err
			}()
			var err error
			select {
			case err = <-done:
			case <-time.After(30 * time.Second): // a bound for a stuck read, not a measure of speed
				t.Fatal("ParseEnv blocked on the file")
			}
			got := problems(t, err)
			want := []string{filepath.Join(dir, "proxy.toml") + ":4:9: servers.s.env.K: " + tt.want}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
			for _, s := range []string{"big-secret", "locked-secret"} {
				if strings.Contains(err.Error(), s) {
					t.Errorf("the error shows the file's content %q", s)
				}
			}
		})
	}
}

// TestFileReferenceInProblems: a problem with a value read from a file names
// the reference, never the secret.
func TestFileReferenceInProblems(t *testing.T) {
	dir := t.TempDir()
	writeSecret(t, filepath.Join(dir, "t"), "file-secret-in-problem\n")
	doc := "startup_timeout = \"${file:t}\"\n"
	_, err := ParseEnv(filepath.Join(dir, "proxy.toml"), []byte(doc), env(nil))
	got := problems(t, err)
	want := []string{filepath.Join(dir, "proxy.toml") + `:1:1: startup_timeout: "${file:t}" is not a duration; write it like "30s", "750ms" or "2m"`}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
}

// TestWarnings: a credential written out in a file that others can read is
// warned about with the key and the fix, and so is a secret file others can
// read; with chmod 600 there is nothing to say, and references are not
// credentials written out.
func TestWarnings(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("permissions are not mode bits on Windows")
	}
	dir := t.TempDir()
	secret := filepath.Join(dir, "token")
	writeSecret(t, secret, "file-secret-w\n")
	if err := os.Chmod(secret, 0o644); err != nil {
		t.Fatal(err)
	}
	doc := `
[servers.remote]
url = "https://user:pw-literal@example.invalid/mcp"
headers = { Authorization = "Bearer literal-bearer-w", X-Ref = "Bearer ${file:token}", Accept = "application/json" }
description = "write key=value pairs"

[servers.local]
command = "server"
args = ["--token", "literal-arg-token", "--name", "visible", "--api-key", "${env:K}"]
env = { API_SECRET = "literal-env-w", KEY_FILE = "/etc/key.pem", LOG_LEVEL = "debug", GH = "ghp_abcdefghijklmnopqrstuvwxyz" }

[servers.off]
command = "server"
disabled = true
env = { DB_PASSWORD = "literal-disabled" }

[servers.health]
command = "server"
[servers.health.health]
tool = "ping"
arguments = { token = "literal-health-arg" }
`
	path := filepath.Join(dir, "proxy.toml")
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("K", "env-secret-w")
	cfg, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	fix := "; run chmod 600 " + path + ", or move the secret out of the file: ${file:PATH} reads it from a file of its own (chmod 600 that one), ${env:NAME} from the environment"
	lit := func(line int, key string) string {
		return path + ":" + strconv.Itoa(line) + ": " + key + " holds a credential written out, and the file is readable by other users (mode 0644)" + fix
	}
	want := []string{
		lit(3, "servers.remote.url"),
		lit(4, "servers.remote.headers.Authorization"),
		lit(9, "servers.local.args"),
		lit(10, "servers.local.env.API_SECRET"),
		lit(10, "servers.local.env.GH"),
		lit(15, "servers.off.env.DB_PASSWORD"),
		lit(21, "servers.health.health.arguments.token"),
		path + ": servers.remote.headers.X-Ref reads the secret file " + secret + ", which is readable by other users (mode 0644); run chmod 600 " + secret,
	}
	if diff := cmp.Diff(want, cfg.Warnings()); diff != "" {
		t.Errorf("Warnings (-want +got):\n%s", diff)
	}
	for _, w := range cfg.Warnings() {
		for _, s := range []string{"literal", "pw-literal", "ghp_", "file-secret", "env-secret"} {
			if strings.Contains(w, s+"-") || strings.Contains(w, s+"abc") {
				t.Errorf("warning shows a secret (%q): %s", s, w)
			}
		}
	}
	for _, p := range []string{path, secret} {
		if err := os.Chmod(p, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if got := cfg.Warnings(); len(got) != 0 {
		t.Errorf("Warnings after chmod 600 = %q, want none", got)
	}
}

func writeSecret(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}
