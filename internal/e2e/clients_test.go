package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// Tests with real MCP client CLIs from npm (clients/package.json), driven
// without a model: each is configured with the README's snippet for it and
// asked for the health of its servers, which makes it start (or reach)
// Manifold, complete its handshake and list the tools.

// clientBin returns the path of a client CLI in clients/node_modules/.bin.
// It skips the test when the CLI is not installed, except under CI (CI is
// set), where `npm ci --prefix clients` is part of the run and a missing CLI
// is a failure.
func clientBin(t *testing.T, name string) string {
	t.Helper()
	p := filepath.Join(moduleRoot, "clients", "node_modules", ".bin", name)
	if _, err := os.Stat(p); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is not installed (CI is set): run `npm ci --prefix clients` in %s", name, moduleRoot)
		}
		t.Skipf("%s is not installed; run `npm ci --prefix clients` in %s", name, moduleRoot)
	}
	return p
}

// clientEnv is the environment of a client CLI: a home of its own (so the
// user's real configuration is neither read nor written) and no traffic
// beyond what the test asks for.
func clientEnv(home string) []string {
	return []string{
		"HOME=" + home,
		"PATH=" + os.Getenv("PATH"),
		"TERM=dumb",
		"NO_COLOR=1",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"DISABLE_AUTOUPDATER=1",
		"DISABLE_TELEMETRY=1",
		"GEMINI_CLI_NO_RELAUNCH=true",
		"GORACE=" + os.Getenv("GORACE"), // for the manifold it starts (quickRaceExit)
	}
}

// runClient runs a client CLI in dir with env and returns its combined
// output, failing the test on a non-zero exit.
func runClient(t *testing.T, dir string, env []string, bin string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(testCtx(t), 2*time.Minute)
	defer cancel()
	cmd := commandContext(ctx, bin, args...)
	cmd.Dir, cmd.Env = dir, env
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(bin), strings.Join(args, " "), err, out)
	}
	return string(out)
}

// recordingManifold writes a script that runs `manifold serve --config cfg`
// with its standard input and output copied to files (what the client sent
// and what Manifold answered, one frame a line), and returns the script and
// the two files.
func recordingManifold(t *testing.T, cfg string) (script, in, out string) {
	t.Helper()
	dir := t.TempDir()
	script, in, out = filepath.Join(dir, "manifold.sh"), filepath.Join(dir, "in.jsonl"), filepath.Join(dir, "out.jsonl")
	body := fmt.Sprintf("#!/bin/sh\ntee -a %s | %s serve --config %s | tee -a %s\n", shQuote(in), shQuote(manifoldBin), shQuote(cfg), shQuote(out))
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return script, in, out
}

// frames reads a file of JSON-RPC frames, one a line.
func frames(t *testing.T, path string) []map[string]json.RawMessage {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var fs []map[string]json.RawMessage
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var f map[string]json.RawMessage
		if err := json.Unmarshal(sc.Bytes(), &f); err != nil {
			t.Fatalf("%s: a line that is not a JSON-RPC frame: %q", path, sc.Text())
		}
		fs = append(fs, f)
	}
	return fs
}

// method returns a frame's method, or "".
func method(f map[string]json.RawMessage) string {
	var m string
	_ = json.Unmarshal(f["method"], &m)
	return m
}

// TestClaudeCodeSnippet configures Claude Code with the README's
// `claude mcp add` line (stdio, user scope) and its HTTP variant, and checks
// that `claude mcp list` reports Manifold connected: Claude started it,
// negotiated and listed its tools.
func TestClaudeCodeSnippet(t *testing.T) {
	t.Parallel()
	claude := clientBin(t, "claude")
	cfg := writeConfig(t, fixture("fx", nil))
	home, work := t.TempDir(), t.TempDir()
	env := clientEnv(home)
	script, in, out := recordingManifold(t, cfg)
	runClient(t, work, env, claude, "mcp", "add", "--scope", "user", "--transport", "stdio", "manifold", "--", script)
	got := runClient(t, work, env, claude, "mcp", "list")
	if !strings.Contains(got, "manifold: "+script) || !strings.Contains(got, "Connected") {
		t.Fatalf("claude mcp list does not report manifold connected:\n%s", got)
	}
	sent, answered := frames(t, in), frames(t, out)
	var methods []string
	for _, f := range sent {
		methods = append(methods, method(f))
	}
	if !strings.Contains(strings.Join(methods, " "), "tools/list") {
		t.Errorf("Claude Code sent %v: no tools/list", methods)
	}
	// Claude Code opens with server/discover at 2026-07-28; Manifold serves
	// that era, so the answer is a DiscoverResult (not -32022) and Claude
	// goes on in 2026-07-28, with no initialize.
	if len(sent) == 0 || method(sent[0]) != "server/discover" {
		t.Fatalf("Claude Code's first frame is not server/discover: %v", methods)
	}
	for _, f := range answered {
		if string(f["id"]) != string(sent[0]["id"]) {
			continue
		}
		var r struct {
			SupportedVersions []string `json:"supportedVersions"`
		}
		if err := json.Unmarshal(f["result"], &r); err != nil || !slices.Contains(r.SupportedVersions, "2026-07-28") {
			t.Errorf("Manifold's answer to Claude Code's server/discover does not offer 2026-07-28: %s", f["result"])
		}
		if f["error"] != nil {
			t.Errorf("Manifold answered Claude Code's server/discover with an error: %s", f["error"])
		}
	}
	if slices.Contains(methods, "initialize") {
		t.Errorf("Claude Code fell back to initialize (%v): the 2026-07-28 face did not serve it", methods)
	}
	var tools int
	for _, f := range answered {
		var r struct {
			Tools []json.RawMessage `json:"tools"`
		}
		if json.Unmarshal(f["result"], &r) == nil && len(r.Tools) > tools {
			tools = len(r.Tools)
		}
	}
	if tools == 0 {
		t.Errorf("no tools/list result with tools among Manifold's answers to Claude Code")
	}

	hp := startHTTP(t, cfg)
	runClient(t, work, env, claude, "mcp", "add", "--transport", "http", "manifold-http", hp.endpoint())
	got = runClient(t, work, env, claude, "mcp", "list")
	if !strings.Contains(got, "manifold-http: "+hp.endpoint()) || strings.Count(got, "Connected") < 2 {
		t.Fatalf("claude mcp list does not report both manifold entries connected:\n%s", got)
	}
}

// TestGeminiCLISnippet configures Gemini CLI with the README's
// `gemini mcp add` line and checks that `gemini mcp list` reports Manifold
// connected. Gemini CLI connects only to the servers of a trusted folder.
func TestGeminiCLISnippet(t *testing.T) {
	t.Parallel()
	gemini := clientBin(t, "gemini")
	cfg := writeConfig(t, fixture("fx", nil))
	home, work := t.TempDir(), t.TempDir()
	env := clientEnv(home)
	if err := os.MkdirAll(filepath.Join(home, ".gemini"), 0o755); err != nil {
		t.Fatal(err)
	}
	trusted, _ := json.Marshal(map[string]string{work: "TRUST_FOLDER"})
	if err := os.WriteFile(filepath.Join(home, ".gemini", "trustedFolders.json"), trusted, 0o644); err != nil {
		t.Fatal(err)
	}
	runClient(t, work, env, gemini, "mcp", "add", "--scope", "user", "manifold", manifoldBin, "serve", "--config", cfg)
	got := runClient(t, work, env, gemini, "mcp", "list")
	if !strings.Contains(got, "manifold: "+manifoldBin) || !strings.Contains(got, "Connected") {
		t.Fatalf("gemini mcp list does not report manifold connected:\n%s", got)
	}
}
