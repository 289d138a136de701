package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// cliFolder is a folder whose ./proxy.toml (alpha and beta) is good, and
// other.toml (gamma only) and bad.toml (one problem) lie beside it: a
// command that ignores the file it is given uses ./proxy.toml.
func cliFolder(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range map[string]string{
		"proxy.toml": twoFixtures(),
		"other.toml": fixture("gamma", nil),
		"bad.toml":   fixture("gamma", nil, `prefx = "g"`),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestCLIArgsConfigFileArgument(t *testing.T) {
	t.Parallel()
	dir := cliFolder(t)
	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantStdout []string // each in stdout
		wantStderr []string // each in stderr
		notStdout  []string // none in stdout
	}{
		{name: "check bad file", args: []string{"check", "bad.toml"}, wantCode: 1,
			wantStderr: []string{"bad.toml:", `did you mean "prefix"?`}, notStdout: []string{"ok"}},
		{name: "check good file", args: []string{"check", "other.toml"},
			wantStdout: []string{"other.toml: ok, 1 server", "gamma"}, notStdout: []string{"alpha"}},
		{name: "check flag after", args: []string{"check", "bad.toml", "--log-level", "info"}, wantCode: 1,
			wantStderr: []string{"bad.toml:"}},
		{name: "tools file", args: []string{"tools", "other.toml"},
			wantStdout: []string{"gamma__echo"}, notStdout: []string{"alpha__echo"}},
		{name: "status file", args: []string{"status", "other.toml", "--fresh"},
			wantStdout: []string{"gamma"}, notStdout: []string{"alpha"}},
		{name: "missing file", args: []string{"check", "nothere.toml"}, wantCode: 2,
			wantStderr: []string{`"nothere.toml" is not a file`}},
		{name: "two files", args: []string{"tools", "--config", "proxy.toml", "other.toml"}, wantCode: 2,
			wantStderr: []string{"two config files"}},
		{name: "same file twice", args: []string{"check", "--config", "other.toml", "other.toml"},
			wantStdout: []string{"other.toml: ok"}},
		{name: "serve extra", args: []string{"serve", "other.toml", "more.toml"}, wantCode: 2,
			wantStderr: []string{"too many arguments"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			stdout, stderr, code := runCLIIn(t, dir, tt.args...)
			if code != tt.wantCode {
				t.Errorf("manifold %s exited %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(tt.args, " "), code, tt.wantCode, stdout, stderr)
			}
			for _, w := range tt.wantStdout {
				if !strings.Contains(stdout, w) {
					t.Errorf("stdout lacks %q:\n%s", w, stdout)
				}
			}
			for _, w := range tt.wantStderr {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
			for _, w := range tt.notStdout {
				if strings.Contains(stdout, w) {
					t.Errorf("stdout has %q:\n%s", w, stdout)
				}
			}
		})
	}
}

func TestCLIArgsFlagsAnywhere(t *testing.T) {
	t.Parallel()
	dir := cliFolder(t)
	other := filepath.Join(dir, "other.toml")
	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantStdout string // in stdout
		wantStderr string // in stderr
	}{
		{name: "explain then config", args: []string{"explain", "gamma__echo", "--config", other},
			wantStdout: "tool gamma__echo"},
		{name: "call then config", args: []string{"call", "gamma__echo", `{"message":"hi"}`, "--config", other},
			wantStdout: "gamma: hi\n"},
		{name: "call then json", args: []string{"call", "gamma__echo", "--json", `{"message":"hi"}`, "--config=" + other},
			wantStdout: `"text": "gamma: hi"`},
		{name: "flags between", args: []string{"call", "--config", other, "gamma__echo", "--log-level", "warn", `{"message":"x"}`},
			wantStdout: "gamma: x\n"},
		{name: "dash dash", args: []string{"call", "--config", other, "--", "gamma__echo", `{"message":"--json"}`},
			wantStdout: "gamma: --json\n"},
		{name: "call too many", args: []string{"call", "gamma__echo", "{}", "extra", "--config", other}, wantCode: 2,
			wantStderr: `call: 3 arguments ["gamma__echo" "{}" "extra"]`},
		{name: "call no name", args: []string{"call", "--config", other}, wantCode: 2,
			wantStderr: "call: no tool name"},
		{name: "explain none", args: []string{"explain", "--config", other}, wantCode: 2,
			wantStderr: "explain: 0 arguments"},
		{name: "bad flag", args: []string{"tools", "--jsn", "--config", other}, wantCode: 2,
			wantStderr: "flag provided but not defined: -jsn"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			stdout, stderr, code := runCLIIn(t, dir, tt.args...)
			if code != tt.wantCode {
				t.Errorf("manifold %s exited %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(tt.args, " "), code, tt.wantCode, stdout, stderr)
			}
			if !strings.Contains(stdout, tt.wantStdout) {
				t.Errorf("stdout lacks %q:\n%s", tt.wantStdout, stdout)
			}
			if !strings.Contains(stderr, tt.wantStderr) {
				t.Errorf("stderr lacks %q:\n%s", tt.wantStderr, stderr)
			}
			if tt.wantCode == 2 && tt.name != "bad flag" && strings.Contains(stderr, "Flags:") {
				t.Errorf("a usage error dumps the usage instead of saying why:\n%s", stderr)
			}
			if strings.Contains(tt.name, "json") {
				var v map[string]any
				if err := json.Unmarshal([]byte(stdout), &v); err != nil {
					t.Errorf("call --json printed no JSON object: %v\n%s", err, stdout)
				}
			}
		})
	}
}

// Each command's --help states the defaults that command applies.
func TestCLIArgsHelpDefaults(t *testing.T) {
	t.Parallel()
	tests := []struct {
		cmd  string
		want string
	}{
		{cmd: "serve", want: "(default: the config's log_level)"},
		{cmd: "tools", want: "(default: warn, whatever the config's log_level)"},
		{cmd: "call", want: "(default: warn, whatever the config's log_level)"},
		{cmd: "explain", want: "(default: warn, whatever the config's log_level)"},
		{cmd: "status", want: "(default: warn, whatever the config's log_level)"},
		{cmd: "check", want: "check starts nothing"},
	}
	for _, tt := range tests {
		t.Run(tt.cmd, func(t *testing.T) {
			t.Parallel()
			stdout, stderr, code := runCLI(t, tt.cmd, "--help")
			if code != 0 {
				t.Errorf("%s --help exited %d", tt.cmd, code)
			}
			if help := stdout + stderr; !strings.Contains(help, tt.want) {
				t.Errorf("%s --help does not say %q:\n%s", tt.cmd, tt.want, help)
			}
		})
	}
}

// check counts what it lists: problems of a policy file are counted one by
// one (they used to count as one), in the singular for one, and a command
// that is not in PATH is one.
func TestCLIArgsCheckCounts(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	files := map[string]string{
		"one.toml":    fixture("alpha", nil, `prefx = "a"`),
		"policy.toml": "policy_files = [\"rules.toml\"]\n" + fixture("alpha", nil),
		"rules.toml":  "[[rul]]\ntool = \"*\"\n[[rules]]\ntool = \"*\"\nefect = \"deny\"\n",
		"path.toml":   "[servers.gone]\ncommand = \"manifold-no-such-server\"\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		file  string
		want  string // the count line
		lines int    // problem lines listed after it
		also  string // in stderr
	}{
		{file: "one.toml", want: "manifold: 1 problem:\n", lines: 1},
		{file: "policy.toml", want: "manifold: 2 problems:\n", lines: 2},
		{file: "path.toml", want: "manifold: 1 problem:\n", lines: 1, also: `servers.gone.command: "manifold-no-such-server" is not found in PATH`},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			t.Parallel()
			_, stderr, code := runCLIIn(t, dir, "check", tt.file)
			if code != 1 {
				t.Errorf("check %s exited %d, want 1\n%s", tt.file, code, stderr)
			}
			i := strings.Index(stderr, tt.want)
			if i < 0 {
				t.Fatalf("check %s does not say %q:\n%s", tt.file, tt.want, stderr)
			}
			if got := strings.Count(strings.TrimSpace(stderr[i+len(tt.want):]), "\n") + 1; got != tt.lines {
				t.Errorf("check %s lists %d problem lines after %q, want %d:\n%s", tt.file, got, tt.want, tt.lines, stderr)
			}
			if !strings.Contains(stderr, tt.also) {
				t.Errorf("check %s does not say %q:\n%s", tt.file, tt.also, stderr)
			}
		})
	}
}

// tools --json has the whole catalog, resources and templates included, and
// the table fits 100 columns.
func TestCLIArgsToolsJSONAndWidth(t *testing.T) {
	t.Parallel()
	cfg := writeConfig(t, twoFixtures())
	stdout, stderr, code := runCLI(t, "tools", "--json", "--config", cfg)
	if code != 0 {
		t.Fatalf("tools --json exited %d\nstderr:\n%s", code, stderr)
	}
	var got struct {
		Catalog []struct {
			Kind, Exposed, Server, Original, Verdict string
			Visible                                  bool
		}
		Servers []struct{ Name, State string }
	}
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("tools --json: %v\n%s", err, stdout)
	}
	kinds := map[string]int{}
	for _, e := range got.Catalog {
		kinds[e.Kind]++
	}
	for _, k := range []string{"tool", "prompt", "resource", "template"} {
		if kinds[k] == 0 {
			t.Errorf("tools --json lists no %s:\n%s", k, stdout)
		}
	}
	if len(got.Servers) != 2 || got.Servers[0].State != "up" {
		t.Errorf("tools --json servers = %+v, want alpha and beta up", got.Servers)
	}

	stdout, stderr, code = runCLI(t, "tools", "--config", cfg)
	if code != 0 {
		t.Fatalf("tools exited %d\nstderr:\n%s", code, stderr)
	}
	for line := range strings.Lines(stdout) {
		line = strings.TrimSuffix(line, "\n")
		if n := len([]rune(line)); n > 100 && strings.Contains(line, " ") {
			t.Errorf("tools prints a line of %d columns, want at most 100: %q", n, line)
		}
	}
	for _, want := range []string{"resource", "template", "alpha+fixture://alpha/readme.txt"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("tools does not list %q:\n%s", want, stdout)
		}
	}
}

// A one-shot call starts only the server it needs.
func TestCLIArgsCallStartsOnlyItsServer(t *testing.T) {
	t.Parallel()
	tests := []struct {
		tool        string
		betaStarted bool
	}{
		{tool: "alpha__echo", betaStarted: false},
		{tool: "beta__echo", betaStarted: true},
	}
	for _, tt := range tests {
		t.Run(tt.tool, func(t *testing.T) {
			t.Parallel()
			marker := filepath.Join(t.TempDir(), "beta-ran") // beta writes it when it stops
			cfg := writeConfig(t, fixture("alpha", nil)+fixture("beta", []string{"-marker", marker}))
			stdout, stderr, code := runCLI(t, "call", tt.tool, `{"message":"hi"}`, "--config", cfg)
			if code != 0 {
				t.Fatalf("call exited %d\nstderr:\n%s", code, stderr)
			}
			if !strings.Contains(stdout, ": hi") {
				t.Errorf("call printed %q", stdout)
			}
			if got := markerWritten(t, marker); got != tt.betaStarted {
				t.Errorf("call %s: server beta started = %v, want %v", tt.tool, got, tt.betaStarted)
			}
		})
	}
}

// While a server takes long to start, a terminal shows which one on stderr;
// stdout carries only the answer. (script(1) gives manifold a terminal.)
func TestCLIArgsPendingOnTerminal(t *testing.T) {
	t.Parallel()
	scriptBin, err := exec.LookPath("script")
	if err != nil {
		t.Skip("script(1) is not installed: no terminal to run manifold on")
	}
	dir := t.TempDir()
	cfg := writeConfig(t, fixture("quick", nil)+fixture("slow", []string{"-mode", "slowstart", "-delay", "3s"}))
	out, typescript := filepath.Join(dir, "stdout"), filepath.Join(dir, "typescript")
	ctx := testCtx(t)
	cmd := commandContext(ctx, scriptBin, "-qfec", shQuote(manifoldBin)+" tools --config "+shQuote(cfg)+" > "+shQuote(out), typescript)
	cmd.Env = append(os.Environ(), "MANIFOLD_CONFIG=")
	cmd.WaitDelay = 5 * time.Second
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("script manifold tools: %v\n%s", err, b)
	}
	term, err := os.ReadFile(typescript)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(term), "manifold: waiting for slow to start") {
		t.Errorf("the terminal did not show the pending server:\n%q", term)
	}
	stdout, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(stdout), "waiting") || !strings.Contains(string(stdout), "slow__echo") {
		t.Errorf("stdout is not the catalog alone:\n%s", stdout)
	}
}

// shQuote quotes s for sh.
func shQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
