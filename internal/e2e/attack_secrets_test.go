package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Secrets of TestSecretsNeverPrinted, each in its own place of the config
// and each with characters that percent-, JSON- or Go-quoting changes, so
// that an encoded spelling is a different string.
var attackSecrets = map[string]string{
	"E2E_QUERY_KEY":  "qS3cr3t+/query=v",          // url query
	"E2E_ARG_TOKEN":  `aS3cr3t"arg\value`,         // args, after --token
	"E2E_HDR_TOKEN":  "hS3cr3t-header-token",      // Authorization header
	"E2E_ENV_SECRET": "eS3cr3t<env>&more",         // env
	"E2E_ANYWHERE":   "xS3cr3t expanded anywhere", // an instructions arg: not a credential by its place
}

// literalBearer is a literal credential written in the file; timeoutSecret
// is the value of the variable of a bad startup_timeout, in the environment
// of check only (the other commands' config does not name it).
const (
	literalBearer = "lS3cr3t-literal-bearer"
	timeoutSecret = "tS3cr3t-timeout-token"
	reloadSecret  = "rS3cr3t-of-a-reloaded-config"
)

// spellings returns s as output may show it: as is, percent-encoded,
// JSON-escaped (with and without HTML escaping) and Go-quoted, and
// each of those quoted once more.
func spellings(s string) []string {
	jsonEsc := func(s string, html bool) string {
		var b strings.Builder
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(html)
		_ = enc.Encode(s)
		out := strings.TrimSpace(b.String())
		return out[1 : len(out)-1]
	}
	goq := func(s string) string { q := strconv.Quote(s); return q[1 : len(q)-1] }
	var out []string
	for _, b := range []string{s, url.QueryEscape(s), url.PathEscape(s), strings.ReplaceAll(url.QueryEscape(s), "+", "%20")} {
		for _, q := range []string{b, jsonEsc(b, true), jsonEsc(b, false), goq(b)} {
			out = append(out, q, jsonEsc(q, true), goq(q))
		}
	}
	return out
}

// assertNoSecret fails when out shows any secret in any spelling.
func assertNoSecret(t *testing.T, where, out string) {
	t.Helper()
	secrets := []string{literalBearer, timeoutSecret, reloadSecret}
	for _, v := range attackSecrets {
		secrets = append(secrets, v)
	}
	assertNoneOf(t, where, out, secrets)
}

// assertNoneOf fails when out shows one of secrets in any spelling.
func assertNoneOf(t *testing.T, where, out string, secrets []string) {
	t.Helper()
	for _, s := range secrets {
		for _, sp := range spellings(s) {
			if i := strings.Index(out, sp); i >= 0 {
				t.Errorf("%s shows the secret %q (as %q) at byte %d:\n%s", where, s, sp, i, out)
				break
			}
		}
	}
}

// TestSecretsNeverPrinted drives the built binary with a config whose secrets
// sit in a URL query, args, a header and env (and, in a second config, in a
// bad startup_timeout and a literal bearer token) through check, tools,
// status (fresh and of running instances, human and JSON), explain, serve
// over stdio and HTTP (its stderr, the status file, GET /status, /readyz) and
// the audit log with arguments: no secret appears anywhere, in any spelling.
func TestSecretsNeverPrinted(t *testing.T) {
	cache := secretEnv(t, attackSecrets) // not parallel: Setenv

	// A remote server that is never there: its errors echo its URL.
	remote := "http://" + freePort(t) + "/mcp?api_key=${E2E_QUERY_KEY}&tenant=acme"
	good := writeConfig(t, `
[audit]
file = "-"
arguments = true

[servers.remote]
url = `+tomlStr(remote)+`
headers = { Authorization = "Bearer ${E2E_HDR_TOKEN}" }
startup_timeout = "2s"
`+fixture("local", []string{"-leak", "-instructions", "${E2E_ANYWHERE}"},
		`env = { API_SECRET = "${E2E_ENV_SECRET}" }`)+`
[servers.local2]
command = `+tomlStr(fixtureBin)+`
args = ["-name", "local2", "--", "--token", "${E2E_ARG_TOKEN}"]
`)
	// local2's fixture refuses arguments after "--" and prints them, the
	// token included, in its error: it fails, and its stderr is what
	// manifold logs and reports.

	t.Run("check of a bad config", func(t *testing.T) {
		t.Setenv("E2E_TIMEOUT", timeoutSecret)
		bad := writeConfig(t, `
startup_timeout = "${E2E_TIMEOUT}"

[servers.r]
url = "https://127.0.0.1/mcp"
headers = { Authorization = "Bearer `+literalBearer+`" }
transport = "Bearer `+literalBearer+`"
`)
		stdout, stderr, code := runCLI(t, "check", "--config", bad)
		if code != 1 {
			t.Errorf("check exited %d, want 1", code)
		}
		if !strings.Contains(stderr, `startup_timeout: "${E2E_TIMEOUT}" is not a duration`) {
			t.Errorf("check does not name the variable of the bad startup_timeout:\n%s", stderr)
		}
		if !strings.Contains(stderr, "transport: ") {
			t.Errorf("check does not report the bad transport:\n%s", stderr)
		}
		assertNoSecret(t, "check (bad config)", stdout+stderr)
	})

	t.Run("one-shot commands", func(t *testing.T) {
		for _, tc := range []struct {
			args []string
			want string // proves the output is about the servers
		}{
			{[]string{"check"}, "api_key=[redacted]"},
			{[]string{"tools"}, `server "remote"`},
			{[]string{"status", "--fresh"}, "remote"},
			{[]string{"status", "--fresh", "--json"}, `"remote"`},
			{[]string{"explain", "--config", good, "local__echo"}, "local__echo"},
		} {
			args := tc.args
			if !slices.Contains(args, "--config") {
				args = append(args, "--config", good)
			}
			stdout, stderr, _ := runCLI(t, args...)
			if !strings.Contains(stdout+stderr, tc.want) {
				t.Errorf("manifold %s does not show %q:\nstdout:\n%s\nstderr:\n%s", tc.args[0], tc.want, stdout, stderr)
			}
			assertNoSecret(t, "manifold "+tc.args[0], stdout+"\n"+stderr)
		}
	})

	t.Run("serve stdio", func(t *testing.T) {
		sp := startStdio(t, good)
		ctx := testCtx(t)
		listTools(ctx, t, sp.cs)
		res := call(ctx, t, sp.cs, "local__args", map[string]any{
			"password": "argpass-123456", "otp": "otp-123456", "jwt": "jwt-123456", "sig": "sig-123456",
			"private_key": "private-123456", "session": "session-123456", "auth": "auth-123456", "pwd": "pwd-123456",
			"note": "Bearer argbearer-123456", "path": "visible-path",
		})
		if res.IsError {
			t.Fatalf("local__args failed: %s", text(res))
		}
		// The remote server's failure and the fixture's leaked lines are in
		// the log once it has tried to start it.
		waitFor(t, 20*time.Second, "the remote server's failure and the fixture's leak in the log", func() bool {
			s := sp.stderr.String()
			return strings.Contains(s, "api_key=[redacted]") && strings.Contains(s, "API_SECRET=[redacted]")
		})
		var file string
		waitFor(t, 10*time.Second, "the status file", func() bool {
			b, err := os.ReadFile(filepath.Join(cache, "manifold", "run", strconv.Itoa(sp.pid())+".json"))
			file = string(b)
			return err == nil && strings.Contains(file, "remote")
		})
		assertNoSecret(t, "the status file", file)
		for _, args := range [][]string{{"status"}, {"status", "--json"}} {
			stdout, stderr, _ := runCLI(t, append(args, "--config", good)...)
			if !strings.Contains(stdout, strconv.Itoa(sp.pid())) {
				t.Errorf("manifold %s does not show the running instance:\n%s%s", strings.Join(args, " "), stdout, stderr)
			}
			assertNoSecret(t, "manifold "+strings.Join(args, " ")+" (running)", stdout+"\n"+stderr)
		}
		sp.stop()
		log := sp.stderr.String()
		if !strings.Contains(log, `"path":"visible-path"`) {
			t.Errorf("the audit line of local__args is missing or lost its plain argument:\n%s", log)
		}
		for line := range strings.Lines(log) {
			if !strings.Contains(line, `"arguments"`) {
				continue
			}
			for _, v := range []string{"argpass", "otp-", "jwt-", "sig-", "private-", "session-", "auth-", "pwd-", "argbearer"} {
				if strings.Contains(line, v+"123456") {
					t.Errorf("the audit line shows the argument %q:\n%s", v+"123456", line)
				}
			}
		}
		assertNoSecret(t, "serve (stdio) stderr", log)
	})

	t.Run("serve reload", func(t *testing.T) {
		// The secrets of a reloaded config are hidden too, in the log of a
		// new server and in a rejected config's problems.
		t.Setenv("E2E_RELOAD_KEY", reloadSecret)
		path := writeConfig(t, fixture("local", nil))
		sp := startStdio(t, path)
		listTools(testCtx(t), t, sp.cs)
		// The new server prints its args, the secret in no credential's place.
		next := fixture("local", nil) + fixture("later", []string{"-leak", "-instructions", "${E2E_RELOAD_KEY}"})
		if err := os.WriteFile(path, []byte(next), 0o644); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 20*time.Second, "the new server's args in the log", func() bool {
			return strings.Contains(sp.stderr.String(), `fixture later: args`)
		})
		if err := os.WriteFile(path, []byte(next+"call_timeout = \"${E2E_RELOAD_KEY}\"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 20*time.Second, "the rejected config in the log", func() bool {
			return strings.Contains(sp.stderr.String(), "the new config is invalid")
		})
		sp.stop()
		// Only the reloaded config's secret: the new server prints the whole
		// environment, whose variables that no config names are not known.
		assertNoneOf(t, "serve stderr across reloads", sp.stderr.String(), []string{reloadSecret})
	})

	t.Run("serve http", func(t *testing.T) {
		hp := startHTTP(t, good)
		ctx := testCtx(t)
		cs := connectHTTP(t, hp)
		listTools(ctx, t, cs)
		get := func(path string) string {
			t.Helper()
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+hp.addr+path, nil)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatalf("GET %s: %v", path, err)
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatalf("GET %s: %v", path, err)
			}
			return string(b)
		}
		var status string
		waitFor(t, 20*time.Second, "the remote server's failure in GET /status", func() bool {
			status = get("/status")
			return strings.Contains(status, "api_key=[redacted]")
		})
		assertNoSecret(t, "GET /status", status)
		assertNoSecret(t, "GET /readyz", get("/readyz"))
		stdout, stderr, _ := runCLI(t, "status", "--url", "http://"+hp.addr)
		if !strings.Contains(stdout, "remote") {
			t.Errorf("manifold status --url does not show remote:\n%s%s", stdout, stderr)
		}
		assertNoSecret(t, "manifold status --url", stdout+"\n"+stderr)
		_ = cs.Close()
		hp.stop(func() {
			_ = syscall.Kill(hp.pid(), syscall.SIGTERM)
			<-hp.exited
		})
		assertNoSecret(t, "serve (http) stderr", hp.stderr.String())
	})
}
