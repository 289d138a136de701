//lint:file-ignore SA1019 sampling, roots and logging are deprecated as of protocol 2026-07-28, but Manifold serves clients on 2024-11-05 to 2025-11-25, for whom they are part of the protocol.

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Attacks on the session boundary over HTTP: every server->client message
// (progress, log messages, sampling, elicitation, roots) reaches exactly the
// session whose request it belongs to, on a stream that session reads.

// connectHTTPNoStandalone is connectHTTPClient for a client that never opens
// the standalone GET stream (optional in the spec): it reads only the
// response streams of its own POSTs.
func connectHTTPNoStandalone(t *testing.T, hp *httpProxy, client *mcp.Client) *mcp.ClientSession {
	t.Helper()
	tr := &mcp.StreamableClientTransport{
		Endpoint:             hp.endpoint(),
		HTTPClient:           &http.Client{Timeout: testTimeout},
		DisableStandaloneSSE: true,
	}
	cs, err := client.Connect(testCtx(t), tr, &mcp.ClientSessionOptions{ProtocolVersion: protocolVersion})
	if err != nil {
		t.Fatalf("connect over HTTP: %v", err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// TestRelayOnTheCallsStream: a server->client request made during a call goes
// out on that call's POST response stream. Sent on the standalone GET stream
// instead, it is lost ("stream not connected") whenever the client has not
// opened that stream yet: the conformance suite's tools-call-sampling and
// tools-call-elicitation failed one run in five that way. A client without a
// standalone stream makes the race certain.
func TestRelayOnTheCallsStream(t *testing.T) {
	t.Parallel()
	cfg := fixture("alpha", []string{"-tools", "echo", "-extra", "sample,elicit,roots"}, `isolation = "session"`)
	hp := startHTTP(t, writeConfig(t, cfg))
	ctx := testCtx(t)
	rec := newRecorder("A")
	cs := connectHTTPNoStandalone(t, hp, rec.client(&mcp.Root{URI: "file:///tmp/e2e-root-a", Name: "a"}))
	waitTool(ctx, t, cs, "alpha__roots")

	for _, tc := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{tool: "alpha__sample", args: map[string]any{"prompt": "hi"}, want: "alpha: sampled model=e2e-model text=" + sampleAnswer("A")},
		{tool: "alpha__elicit", args: map[string]any{"message": "why?"}, want: `"answer":"from A"`},
		{tool: "alpha__roots", want: "alpha: roots file:///tmp/e2e-root-a"},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			for i := range 3 {
				res := call(ctx, t, cs, tc.tool, tc.args)
				if got := text(res); res.IsError || !strings.Contains(got, tc.want) {
					t.Fatalf("call %d: %s = %q (isError %v), want it to contain %q", i, tc.tool, got, res.IsError, tc.want)
				}
			}
		})
	}
}

// callText calls a tool and returns the text of its result, or of the
// protocol error it got.
func callText(ctx context.Context, cs *mcp.ClientSession, name string, args any) string {
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return err.Error()
	}
	return text(res)
}

// quietBound is how long a session is watched for a message it must never
// get, after the message went elsewhere (or nowhere). Not an assertion on
// speed: a message that arrives later still fails the checks at the end.
const quietBound = 1500 * time.Millisecond

// logData returns the data of every log message rec got.
func logData(rec *recorder) []string {
	var out []string
	rec.snapshot(func() {
		for _, l := range rec.logs {
			out = append(out, fmt.Sprint(l.Data))
		}
	})
	return out
}

// leaked returns a condition for recorder.waitFor: rec got a log message
// with data.
func leaked(rec *recorder, data string) func() bool {
	return func() bool {
		return slices.ContainsFunc(rec.logs, func(l mcp.LoggingMessageParams) bool { return l.Data == data })
	}
}

// progressMessages returns the message of every progress notification rec
// got.
func progressMessages(rec *recorder) []string {
	var out []string
	rec.snapshot(func() {
		for _, p := range rec.progress {
			out = append(out, p.Message)
		}
	})
	return out
}

// TestSessionsNeverSeeEachOther: two HTTP sessions share misbehaving servers
// (isolation = "shared", the default); whatever the servers send, each
// session's stream carries only what belongs to it.
func TestSessionsNeverSeeEachOther(t *testing.T) {
	t.Parallel()
	cfg := fixture("alpha", []string{"-tools", "echo", "-extra", "progress,log,later,sample,elicit,roots"}) +
		fixture("beta", []string{"-tools", "echo", "-extra", "inject"}) +
		fixture("gamma", []string{"-tools", "echo", "-extra", "sample,log"}, `isolation = "session"`)
	hp := startHTTP(t, writeConfig(t, cfg))
	ctx := testCtx(t)
	recA, recB := newRecorder("A"), newRecorder("B")
	a := connectHTTPClient(t, hp, recA.client(&mcp.Root{URI: "file:///tmp/e2e-root-a", Name: "a"}), protocolVersion)
	b := connectHTTPClient(t, hp, recB.client(&mcp.Root{URI: "file:///tmp/e2e-root-b", Name: "b"}), protocolVersion)
	waitTool(ctx, t, a, "alpha__later")
	waitTool(ctx, t, a, "beta__inject")
	waitTool(ctx, t, a, "gamma__sample")
	for _, cs := range []*mcp.ClientSession{a, b} {
		if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
			t.Fatalf("logging/setLevel: %v", err)
		}
	}

	t.Run("progress with another call's token is dropped", func(t *testing.T) {
		// A's call reports its upstream token in its progress messages; B
		// has another server send progress with it while A's call runs.
		done := make(chan *mcp.CallToolResult, 1)
		go func() {
			res, err := a.CallTool(ctx, &mcp.CallToolParams{
				Name:      "alpha__progress",
				Arguments: map[string]any{"steps": 4, "tag": "A", "delay_ms": 300, "echo_token": true},
				Meta:      mcp.Meta{"progressToken": "token-of-A"},
			})
			if err != nil {
				t.Errorf("session A: alpha__progress: %v", err)
			}
			done <- res
		}()
		var upstreamToken string
		recA.await(ctx, t, "session A: its first progress notification", func() bool {
			for _, p := range recA.progress {
				if m := upstreamTokenRE.FindStringSubmatch(p.Message); m != nil {
					upstreamToken = m[1]
					return true
				}
			}
			return false
		})
		res := call(ctx, t, b, "beta__inject", map[string]any{"token": upstreamToken, "message": "injected by beta"})
		if res.IsError {
			t.Fatalf("beta__inject: %q", text(res))
		}
		<-done
		want := []string{
			"A 1 token " + upstreamToken, "A 2 token " + upstreamToken,
			"A 3 token " + upstreamToken, "A 4 token " + upstreamToken,
		}
		recA.waitFor(ctx, awaitBound, func() bool { return len(recA.progress) >= 4 })
		if diff := cmp.Diff(want, progressMessages(recA)); diff != "" {
			t.Errorf("session A: progress notifications (-want +got):\n%s", diff)
		}
		if got := progressMessages(recB); len(got) != 0 {
			t.Errorf("session B got progress %q, want none", got)
		}
	})

	t.Run("log messages reach only the session whose call they came in", func(t *testing.T) {
		res := call(ctx, t, a, "alpha__log", map[string]any{"level": "info", "data": "during A's call"})
		if res.IsError {
			t.Fatalf("alpha__log: %q", text(res))
		}
		recA.await(ctx, t, "session A: the log message of its call", func() bool {
			return slices.ContainsFunc(recA.logs, func(l mcp.LoggingMessageParams) bool { return l.Data == "during A's call" })
		})
		// Outside any call, with two sessions connected, a log message
		// belongs to neither.
		if res := call(ctx, t, a, "alpha__later", map[string]any{"action": "log", "delay_ms": 50, "data": "outside any call"}); res.IsError {
			t.Fatalf("alpha__later: %q", text(res))
		}
		recB.waitFor(ctx, quietBound, leaked(recB, "during A's call"))
		recB.waitFor(ctx, quietBound, leaked(recB, "outside any call"))
		if got := logData(recB); slices.Contains(got, "during A's call") || slices.Contains(got, "outside any call") {
			t.Errorf("session B got log messages %q, want none of A's call and none from outside any call", got)
		}
		if got := logData(recA); slices.Contains(got, "outside any call") {
			t.Errorf("session A got log messages %q, want none from outside any call", got)
		}
	})

	t.Run("a request outside any call is shown to nobody", func(t *testing.T) {
		// A's call returns at once; its server asks for sampling while no
		// session has a call in flight on it. (While exactly one had, the
		// request would be taken for that session's: relay_shared_test.go.)
		if res := call(ctx, t, a, "alpha__later", map[string]any{"action": "sample", "delay_ms": 200, "data": "A's prompt"}); res.IsError {
			t.Fatalf("alpha__later: %q", text(res))
		}
		for name, rec := range map[string]*recorder{"A": recA, "B": recB} {
			rec.waitFor(ctx, quietBound, func() bool { return len(rec.samples) > 0 })
			var n int
			rec.snapshot(func() { n = len(rec.samples) })
			if n != 0 {
				t.Errorf("session %s was asked %d sampling request(s), want none", name, n)
			}
		}
	})

	t.Run("a shared server's roots are refused, naming the capability", func(t *testing.T) {
		got := callText(ctx, a, "alpha__roots", nil)
		if want := "the proxy did not offer the roots capability"; !strings.Contains(got, want) || !strings.Contains(got, `isolation = "session"`) {
			t.Errorf("alpha__roots = %q, want it to say %q and how to get it (isolation = \"session\")", got, want)
		}
	})

	t.Run("a session's own process gets only what that session declared", func(t *testing.T) {
		bare := connectHTTPClient(t, hp, mcp.NewClient(&mcp.Implementation{Name: "bare", Version: "0"}, nil), protocolVersion)
		got := text(call(ctx, t, bare, "gamma__sample", map[string]any{"prompt": "p"}))
		if want := "the client did not declare the sampling capability"; !strings.Contains(got, want) {
			t.Errorf("gamma__sample from a client without sampling = %q, want it to say %q", got, want)
		}
		res := call(ctx, t, a, "gamma__sample", map[string]any{"prompt": "p"})
		if got, want := text(res), "gamma: sampled model=e2e-model text="+sampleAnswer("A"); got != want {
			t.Errorf("gamma__sample from A = %q, want %q", got, want)
		}
		// The process started after A set its log level, and has it.
		if res := call(ctx, t, a, "gamma__log", map[string]any{"level": "info", "data": "from A's own gamma"}); res.IsError {
			t.Fatalf("gamma__log: %q", text(res))
		}
		recA.await(ctx, t, "session A: the log message of its own process", func() bool {
			return slices.ContainsFunc(recA.logs, func(l mcp.LoggingMessageParams) bool { return l.Data == "from A's own gamma" })
		})
		recB.waitFor(ctx, quietBound, leaked(recB, "from A's own gamma"))
		if got := logData(recB); slices.Contains(got, "from A's own gamma") {
			t.Errorf("session B got log messages %q, want none of A's own process", got)
		}
	})
}

// TestSharedServerCapabilitiesOverHTTP: a shared server-everything over HTTP
// is offered sampling and elicitation (its requests go to its one caller,
// relay_shared_test.go) and never roots, whatever the HTTP client declares:
// it lists the same tools as over stdio to a client that declares all
// three (a shared server is offered no roots there either).
func TestSharedServerCapabilitiesOverHTTP(t *testing.T) {
	t.Parallel()
	cfg := writeConfig(t, everythingServer(t))
	ctx := testCtx(t)
	names := func(cs *mcp.ClientSession) []string {
		waitTool(ctx, t, cs, "everything__echo")
		var out []string
		for tool, err := range cs.Tools(ctx, nil) {
			if err != nil {
				t.Fatalf("tools/list: %v", err)
			}
			out = append(out, tool.Name)
		}
		slices.Sort(out)
		return out
	}
	hp := startHTTP(t, cfg)
	listed := names(connectHTTPClient(t, hp, mcp.NewClient(&mcp.Implementation{Name: "bare", Version: "0"}, nil), protocolVersion))
	for _, tool := range []string{"everything__trigger-sampling-request", "everything__trigger-elicitation-request", "everything__trigger-url-elicitation"} {
		if !slices.Contains(listed, tool) {
			t.Errorf("over HTTP a shared server-everything does not list %s: it was not offered the capability", tool)
		}
	}
	if slices.Contains(listed, "everything__get-roots-list") {
		t.Errorf("over HTTP a shared server-everything lists get-roots-list: it was offered roots")
	}
	// A cache of its own: the catalog the HTTP run cached was listed for
	// other capabilities, and would be advertised until the live list
	// corrects it.
	sp := startStdioEnv(t, cfg, newRecorder("stdio").client(&mcp.Root{URI: "file:///tmp/e2e-root", Name: "r"}), "XDG_CACHE_HOME="+t.TempDir())
	overStdio := names(sp.cs)
	// Over HTTP URL-mode elicitation is offered too (a caller that did not
	// declare it is refused, naming elicitation.url); the stdio client
	// declares form mode only.
	overHTTP := slices.DeleteFunc(listed, func(name string) bool { return name == "everything__trigger-url-elicitation" })
	if diff := cmp.Diff(overStdio, overHTTP); diff != "" {
		t.Errorf("tools over HTTP (a shared server) vs over stdio (a client that declares sampling, elicitation and roots) (-stdio +http):\n%s", diff)
	}
}

// TestUnsolicitedRequests: over stdio a server may not ask the client for
// sampling or elicitation outside any call, unless its config allows it.
func TestUnsolicitedRequests(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, extra, want string
		asked             int
	}{
		{name: "refused by default", want: `sampling/createMessage from "alpha" refused: it came outside any call of the client, and unsolicited requests are not relayed; to allow them set allow_unsolicited = ["sampling"]`},
		{name: "allowed by allow_unsolicited", extra: `allow_unsolicited = ["sampling"]`, want: "later sample: answered by model e2e-model", asked: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rec := newRecorder("e2e")
			cfg := fixture("alpha", []string{"-tools", "echo", "-extra", "later,roots"}, tc.extra)
			sp := startStdioClient(t, writeConfig(t, cfg), rec.client(&mcp.Root{URI: "file:///tmp/e2e-root", Name: "r"}), protocolVersion)
			ctx := testCtx(t)
			waitTool(ctx, t, sp.cs, "alpha__later")
			if err := sp.cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
				t.Fatalf("logging/setLevel: %v", err)
			}
			if res := call(ctx, t, sp.cs, "alpha__later", map[string]any{"action": "sample", "delay_ms": 100, "data": "unprompted"}); res.IsError {
				t.Fatalf("alpha__later: %q", text(res))
			}
			var outcome string
			rec.await(ctx, t, "the server's report of its request", func() bool {
				for _, l := range rec.logs {
					if d := fmt.Sprint(l.Data); strings.HasPrefix(d, "later sample:") {
						outcome = d
						return true
					}
				}
				return false
			})
			if !strings.Contains(outcome, tc.want) {
				t.Errorf("outcome = %q, want it to contain %q", outcome, tc.want)
			}
			var n int
			rec.snapshot(func() { n = len(rec.samples) })
			if n != tc.asked {
				t.Errorf("the client was asked %d sampling request(s), want %d", n, tc.asked)
			}
			// Roots of a shared server: the folders of its config, never the
			// client's, over stdio as over HTTP.
			got := callText(ctx, sp.cs, "alpha__roots", nil)
			if want := `roots are relayed only to a server with isolation = "session"`; !strings.Contains(got, want) {
				t.Errorf("alpha__roots = %q, want it to say %q", got, want)
			}
		})
	}
}

// TestRootsNeverWidenASharedServer: client A declares a root outside the
// folder a shared server-filesystem was configured with, and says its roots
// changed; neither A nor another client may then reach that folder through
// the shared process.
func TestRootsNeverWidenASharedServer(t *testing.T) {
	t.Parallel()
	bin := nodeBin(t, "mcp-server-filesystem")
	dirs := map[string]string{}
	for _, name := range []string{"allowed", "secret"} {
		dir, err := filepath.EvalSymlinks(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name+".txt"), []byte(name+" content\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		dirs[name] = dir
	}
	cfg := fmt.Sprintf("\n[servers.fs]\ncommand = %s\nargs = %s\n", tomlStr(bin), tomlStrs([]string{dirs["allowed"]}))
	hp := startHTTP(t, writeConfig(t, cfg))
	ctx := testCtx(t)

	client := newRecorder("A").client()
	a := connectHTTPClient(t, hp, client, protocolVersion)
	waitTool(ctx, t, a, "fs__list_allowed_directories")
	client.AddRoots(&mcp.Root{URI: "file://" + dirs["secret"], Name: "secret"})
	// server-filesystem would replace its folders with the roots, at once
	// after roots/list_changed; watch for that, bounded.
	deadline := time.Now().Add(2 * quietBound)
	for time.Now().Before(deadline) && !strings.Contains(callText(ctx, a, "fs__list_allowed_directories", nil), dirs["secret"]) {
		time.Sleep(pollEvery)
	}

	b := connectHTTPClient(t, hp, newRecorder("B").client(), protocolVersion)
	for name, cs := range map[string]*mcp.ClientSession{"A": a, "B": b} {
		got := callText(ctx, cs, "fs__list_allowed_directories", nil)
		if !strings.Contains(got, dirs["allowed"]) || strings.Contains(got, dirs["secret"]) {
			t.Errorf("session %s: fs__list_allowed_directories = %q, want %s (the config's folder) and not %s (A's root)", name, got, dirs["allowed"], dirs["secret"])
		}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "fs__read_text_file", Arguments: map[string]any{"path": filepath.Join(dirs["secret"], "secret.txt")}})
		if err == nil && !res.IsError {
			t.Errorf("session %s read A's root through the shared server: %q", name, text(res))
		}
	}
}
