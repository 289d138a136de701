package e2e

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// unsetVar is a variable no test sets: a server whose env, headers or
// args name it is left out, as a config written by manifold import is when
// a secret is missing.
const unsetVar = "MANIFOLD_E2E_NEVER_SET_TOKEN"

// TestUnsetVariableLeavesServerOut: one server's missing secret is that
// server's problem. The others serve; the one left out is named with its
// variable in check (a warning), the serve log, tools, status and doctor;
// a reload that resolves the variable brings the server in.
func TestUnsetVariableLeavesServerOut(t *testing.T) {
	t.Parallel()
	beta := fixture("beta", nil, `env = { API_TOKEN = "${`+unsetVar+`}" }`)
	body := `call_timeout = "20s"` + "\n" + fixture("alpha", nil) + beta +
		"\n[servers.remote]\nurl = \"http://127.0.0.1:9/mcp\"\nheaders = { Authorization = \"Bearer ${" + unsetVar + "}\" }\n"
	path := writeConfig(t, body)

	t.Run("check", func(t *testing.T) {
		stdout, stderr, code := runCLI(t, "check", "--config", path)
		if code != 0 {
			t.Fatalf("check exited %d, want 0 (a warning)\nstderr:\n%s", code, stderr)
		}
		for _, name := range []string{"beta", "remote"} {
			if !strings.Contains(stderr, "warning: server "+name+" will be left out") {
				t.Errorf("check does not warn that %s is left out:\n%s", name, stderr)
			}
		}
		// Manifold's own words stay: "environment", after a key path that
		// names a credential, is no secret (the redactor masked it).
		if !strings.Contains(stderr, "environment variable "+unsetVar+" is not set") {
			t.Errorf("check does not name the variable:\n%s", stderr)
		}
		if !strings.Contains(stdout, "ok, 1 server") {
			t.Errorf("check stdout: %q, want ok, 1 server", stdout)
		}
	})

	t.Run("tools", func(t *testing.T) {
		stdout, stderr, code := runCLI(t, "tools", "--config", path)
		if code != 0 {
			t.Fatalf("tools exited %d\nstderr:\n%s", code, stderr)
		}
		if !strings.Contains(stdout, "alpha__echo") || strings.Contains(stdout, "beta__echo") {
			t.Errorf("tools lists alpha's tools and not beta's? \n%s", stdout)
		}
		if !strings.Contains(stdout, `server "beta" is misconfigured: `) || !strings.Contains(stdout, unsetVar) {
			t.Errorf("tools does not say beta is misconfigured, naming the variable:\n%s", stdout)
		}
	})

	t.Run("call", func(t *testing.T) {
		_, stderr, code := runCLI(t, "call", "--config", path, "beta__echo", `{"text":"x"}`)
		if code == 0 || !strings.Contains(stderr, "server beta is left out") || !strings.Contains(stderr, unsetVar) {
			t.Errorf("call of a tool of beta: exit %d, want an error that says beta is left out and why:\n%s", code, stderr)
		}
	})

	t.Run("status", func(t *testing.T) {
		stdout, stderr, code := runCLI(t, "status", "--fresh", "--json", "--config", path)
		if code != 0 {
			t.Fatalf("status exited %d\nstderr:\n%s", code, stderr)
		}
		var servers []struct{ Name, State, Error string }
		if err := json.Unmarshal([]byte(stdout), &servers); err != nil {
			t.Fatalf("status --json: %v\n%s", err, stdout)
		}
		states := map[string]string{}
		for _, s := range servers {
			states[s.Name] = s.State
			if s.State == "misconfigured" && !strings.Contains(s.Error, unsetVar) {
				t.Errorf("status: %s's error does not name the variable: %q", s.Name, s.Error)
			}
		}
		if states["alpha"] != "up" || states["beta"] != "misconfigured" || states["remote"] != "misconfigured" {
			t.Errorf("status states %v, want alpha up, beta and remote misconfigured\n%s", states, stdout)
		}
	})

	t.Run("doctor", func(t *testing.T) {
		stdout, _, _ := runCLI(t, "doctor", "--config", path)
		if !strings.Contains(stdout, "server beta is left out, the others serve") || !strings.Contains(stdout, "environment variable "+unsetVar+" is not set") {
			t.Errorf("doctor does not report beta left out with its variable:\n%s", stdout)
		}
	})

	t.Run("serve and reload", func(t *testing.T) {
		cfg := writeConfig(t, body)
		sp := startStdio(t, cfg)
		ctx := testCtx(t)
		tools := listTools(ctx, t, sp.cs)
		if tools["alpha__echo"] == nil || tools["beta__echo"] != nil {
			t.Fatalf("tools %v: want alpha's, not beta's", toolNames(tools))
		}
		waitFor(t, awaitBound, "the log names beta left out", func() bool {
			log := sp.stderr.String()
			return strings.Contains(log, "server left out") && strings.Contains(log, "upstream=beta") && strings.Contains(log, unsetVar)
		})
		// A default for the variable: the reload brings beta in.
		fixed := strings.ReplaceAll(body, "${"+unsetVar+"}", "${"+unsetVar+":-none}")
		if err := os.WriteFile(cfg, []byte(withListWait(fixed)), 0o644); err != nil {
			t.Fatal(err)
		}
		waitFor(t, awaitBound, "beta's tools after the reload", func() bool {
			return listTools(ctx, t, sp.cs)["beta__echo"] != nil
		})
	})
}
