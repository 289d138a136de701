//lint:file-ignore SA1019 sampling, roots and logging are deprecated as of protocol 2026-07-28, but Manifold serves clients on 2024-11-05 to 2025-11-25, for whom they are part of the protocol.

package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Relays through the proxy, both ways, against server-everything (namespaced
// as "everything") and the Go fixture's opt-in relay tools.

// Bounds of the relay tests; deadlines for something to arrive, never
// assertions on speed.
const (
	awaitBound = 20 * time.Second       // a notification or request reaching the client
	pollEvery  = 100 * time.Millisecond // re-listing or re-calling until a change shows
)

// recorder is a client that records what its handlers receive: progress,
// log messages, list_changed and resources/updated notifications, and the
// sampling and elicitation requests it answers.
type recorder struct {
	name string // the client's name; its answers carry it

	mu               sync.Mutex
	progress         []mcp.ProgressNotificationParams // guarded by mu
	logs             []mcp.LoggingMessageParams       // guarded by mu
	updated          []string                         // guarded by mu: resources/updated URIs
	toolsChanged     int                              // guarded by mu
	resourcesChanged int                              // guarded by mu
	samples          []mcp.CreateMessageParams        // guarded by mu
	elicits          []mcp.ElicitParams               // guarded by mu
	more             chan struct{}                    // signalled after each change
}

func newRecorder(name string) *recorder {
	return &recorder{name: name, more: make(chan struct{}, 1)}
}

// sampleAnswer and elicitAnswer are what the recorder named name answers.
func sampleAnswer(name string) string { return "answer from " + name }

func elicitAnswer(name string) map[string]any {
	return map[string]any{"name": name, "answer": "from " + name}
}

// client returns an MCP client whose handlers record into r and that
// declares sampling, elicitation and roots (with the given roots).
func (r *recorder) client(roots ...*mcp.Root) *mcp.Client {
	c := mcp.NewClient(&mcp.Implementation{Name: r.name, Version: "0"}, &mcp.ClientOptions{
		CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			r.change(func() { r.samples = append(r.samples, *req.Params) })
			return &mcp.CreateMessageResult{Role: "assistant", Model: "e2e-model", Content: &mcp.TextContent{Text: sampleAnswer(r.name)}}, nil
		},
		ElicitationHandler: r.elicit,
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			r.change(func() { r.progress = append(r.progress, *req.Params) })
		},
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
			r.change(func() { r.logs = append(r.logs, *req.Params) })
		},
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			r.change(func() { r.toolsChanged++ })
		},
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) {
			r.change(func() { r.resourcesChanged++ })
		},
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			r.change(func() { r.updated = append(r.updated, req.Params.URI) })
		},
	})
	c.AddRoots(roots...)
	// Elicitations are answered before the go-sdk client checks the requested
	// schema: that check rejects valid enum schemas (SEP-1330) which
	// server-everything sends and clients in the field accept. What is under
	// test is the relay, not this client's SDK.
	c.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if er, ok := req.(*mcp.ElicitRequest); ok && method == "elicitation/create" {
				return r.elicit(ctx, er)
			}
			return next(ctx, method, req)
		}
	})
	return c
}

func (r *recorder) elicit(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	r.change(func() { r.elicits = append(r.elicits, *req.Params) })
	return &mcp.ElicitResult{Action: "accept", Content: elicitAnswer(r.name)}, nil
}

// change applies f under the lock and wakes await.
func (r *recorder) change(f func()) {
	r.mu.Lock()
	f()
	r.mu.Unlock()
	select {
	case r.more <- struct{}{}:
	default:
	}
}

// await waits until cond, called with r.mu held, is true; it fails the test
// after awaitBound.
func (r *recorder) await(ctx context.Context, t *testing.T, what string, cond func() bool) {
	t.Helper()
	if !r.waitFor(ctx, awaitBound, cond) {
		t.Fatalf("%s: not within %s", what, awaitBound)
	}
}

// waitFor reports whether cond, called with r.mu held, became true within
// bound.
func (r *recorder) waitFor(ctx context.Context, bound time.Duration, cond func() bool) bool {
	deadline := time.NewTimer(bound)
	defer deadline.Stop()
	for {
		r.mu.Lock()
		ok := cond()
		r.mu.Unlock()
		if ok {
			return true
		}
		select {
		case <-r.more:
		case <-deadline.C:
			return false
		case <-ctx.Done():
			return false
		}
	}
}

// snapshot runs f with r.mu held.
func (r *recorder) snapshot(f func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f()
}

// everythingServer is the [servers.everything] table of server-everything,
// or skips the test when it is not installed.
func everythingServer(t *testing.T) string {
	t.Helper()
	return fmt.Sprintf("\n[servers.everything]\ncommand = %s\nargs = [\"stdio\"]\n", tomlStr(nodeBin(t, "mcp-server-everything")))
}

// eventually calls check every pollEvery until it returns "" or awaitBound
// passes; then it fails the test with check's last answer.
func eventually(ctx context.Context, t *testing.T, check func() string) {
	t.Helper()
	deadline := time.Now().Add(awaitBound)
	for {
		why := check()
		if why == "" {
			return
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			t.Fatalf("not within %s: %s", awaitBound, why)
		}
		time.Sleep(pollEvery)
	}
}

// waitTool waits until the proxy lists the tool name: server-everything
// registers its client-dependent tools after initialize and announces them
// with list_changed.
func waitTool(ctx context.Context, t *testing.T, cs *mcp.ClientSession, name string) *mcp.Tool {
	t.Helper()
	var tool *mcp.Tool
	eventually(ctx, t, func() string {
		tools := listTools(ctx, t, cs)
		if tool = tools[name]; tool == nil {
			return fmt.Sprintf("%s not listed: %v", name, toolNames(tools))
		}
		return ""
	})
	return tool
}

func TestEverythingProgress(t *testing.T) {
	t.Parallel()
	rec := newRecorder("e2e")
	sp := startStdioClient(t, writeConfig(t, everythingServer(t)), rec.client(), protocolVersion)
	ctx := testCtx(t)
	const name = "everything__trigger-long-running-operation"
	waitTool(ctx, t, sp.cs, name)

	const token = "client-token-7"
	res, err := sp.cs.CallTool(ctx, &mcp.CallToolParams{
		Name:      name,
		Arguments: map[string]any{"duration": 0.6, "steps": 3},
		Meta:      mcp.Meta{"progressToken": token},
	})
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	if got, want := text(res), "Long running operation completed. Duration: 0.6 seconds, Steps: 3."; got != want || res.IsError {
		t.Errorf("%s = %q (isError %v), want %q", name, got, res.IsError, want)
	}
	// Waits for 3; the diff below says what arrived.
	rec.waitFor(ctx, awaitBound, func() bool { return len(rec.progress) >= 3 })
	var got []string
	rec.snapshot(func() {
		for _, p := range rec.progress {
			got = append(got, fmt.Sprintf("%v %v/%v", p.ProgressToken, p.Progress, p.Total))
		}
	})
	want := []string{token + " 1/3", token + " 2/3", token + " 3/3"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("progress notifications (token progress/total) (-want +got):\n%s", diff)
	}
}

func TestSampling(t *testing.T) {
	t.Parallel()
	rec := newRecorder("e2e")
	cfg := everythingServer(t) + fixture("alpha", []string{"-tools", "echo", "-extra", "sample"})
	sp := startStdioClient(t, writeConfig(t, cfg), rec.client(), protocolVersion)
	ctx := testCtx(t)

	t.Run("everything", func(t *testing.T) {
		const name = "everything__trigger-sampling-request"
		waitTool(ctx, t, sp.cs, name)
		res := call(ctx, t, sp.cs, name, map[string]any{"prompt": "say hi", "maxTokens": 20})
		got := text(res)
		if res.IsError || !strings.Contains(got, sampleAnswer("e2e")) || !strings.Contains(got, "e2e-model") {
			t.Errorf("%s = %q (isError %v), want the client's answer %q from e2e-model", name, got, res.IsError, sampleAnswer("e2e"))
		}
		var p mcp.CreateMessageParams
		rec.snapshot(func() {
			if len(rec.samples) > 0 {
				p = rec.samples[len(rec.samples)-1]
			}
		})
		if len(p.Messages) != 1 {
			t.Fatalf("the client's sampling handler got %d messages, want 1", len(p.Messages))
		}
		if tc, ok := p.Messages[0].Content.(*mcp.TextContent); !ok || !strings.HasSuffix(tc.Text, "say hi") {
			t.Errorf("sampling message = %#v, want the tool's prompt", p.Messages[0].Content)
		}
		if p.IncludeContext != "" && p.IncludeContext != "none" {
			t.Errorf("sampling includeContext = %q, want none or absent", p.IncludeContext)
		}
	})

	t.Run("includeContext reduced to none", func(t *testing.T) {
		// The fixture asks with includeContext "thisServer".
		waitTool(ctx, t, sp.cs, "alpha__sample")
		res := call(ctx, t, sp.cs, "alpha__sample", map[string]any{"prompt": "hello"})
		if got, want := text(res), "alpha: sampled model=e2e-model text="+sampleAnswer("e2e"); got != want || res.IsError {
			t.Errorf("alpha__sample = %q (isError %v), want %q", got, res.IsError, want)
		}
		var p mcp.CreateMessageParams
		rec.snapshot(func() { p = rec.samples[len(rec.samples)-1] })
		if p.IncludeContext != "none" {
			t.Errorf("sampling includeContext = %q, want none", p.IncludeContext)
		}
		if p.SystemPrompt != "fixture alpha" {
			t.Errorf("sampling systemPrompt = %q, want %q", p.SystemPrompt, "fixture alpha")
		}
	})
}

func TestElicitation(t *testing.T) {
	t.Parallel()
	rec := newRecorder("e2e")
	cfg := everythingServer(t) + fixture("alpha", []string{"-tools", "echo", "-extra", "elicit"})
	sp := startStdioClient(t, writeConfig(t, cfg), rec.client(), protocolVersion)
	ctx := testCtx(t)

	lastMessage := func() string {
		var m string
		rec.snapshot(func() {
			if len(rec.elicits) > 0 {
				m = rec.elicits[len(rec.elicits)-1].Message
			}
		})
		return m
	}

	t.Run("everything", func(t *testing.T) {
		const name = "everything__trigger-elicitation-request"
		waitTool(ctx, t, sp.cs, name)
		res := call(ctx, t, sp.cs, name, nil)
		got := text(res)
		if res.IsError || !strings.Contains(got, "User provided the requested information") || !strings.Contains(got, "- Name: e2e") {
			t.Errorf("%s = %q (isError %v), want the client's accepted answer with Name e2e", name, got, res.IsError)
		}
		if m, want := lastMessage(), "[everything] Please provide inputs for the following fields:"; m != want {
			t.Errorf("elicitation message seen by the client = %q, want %q", m, want)
		}
	})

	t.Run("fixture", func(t *testing.T) {
		waitTool(ctx, t, sp.cs, "alpha__elicit")
		res := call(ctx, t, sp.cs, "alpha__elicit", map[string]any{"message": "why?"})
		if got := text(res); res.IsError || !strings.HasPrefix(got, "alpha: elicit action=accept content=") || !strings.Contains(got, `"answer":"from e2e"`) {
			t.Errorf("alpha__elicit = %q (isError %v), want the accepted answer from e2e", got, res.IsError)
		}
		if m, want := lastMessage(), "[alpha] why?"; m != want {
			t.Errorf("elicitation message seen by the client = %q, want %q", m, want)
		}
	})
}

func TestRoots(t *testing.T) {
	t.Parallel()
	rec := newRecorder("e2e")
	client := rec.client(&mcp.Root{URI: "file:///tmp/e2e-root-one", Name: "one"})
	// Roots are relayed only to servers whose process serves one client.
	cfg := everythingServer(t) + "isolation = \"session\"\n" +
		fixture("alpha", []string{"-tools", "echo", "-extra", "roots"}, `isolation = "session"`)
	sp := startStdioClient(t, writeConfig(t, cfg), client, protocolVersion)
	ctx := testCtx(t)
	const name = "everything__get-roots-list"
	waitTool(ctx, t, sp.cs, name)
	waitTool(ctx, t, sp.cs, "alpha__roots")

	res := call(ctx, t, sp.cs, name, nil)
	if got := text(res); res.IsError || !strings.Contains(got, "(1 total)") || !strings.Contains(got, "URI: file:///tmp/e2e-root-one") {
		t.Errorf("%s = %q (isError %v), want the client's one root", name, got, res.IsError)
	}
	if got, want := text(call(ctx, t, sp.cs, "alpha__roots", nil)), "alpha: roots file:///tmp/e2e-root-one"; got != want {
		t.Errorf("alpha__roots = %q, want %q", got, want)
	}

	// A new root: the client sends roots/list_changed, the proxy passes it on,
	// and server-everything asks for the roots again.
	client.AddRoots(&mcp.Root{URI: "file:///tmp/e2e-root-two", Name: "two"})
	eventually(ctx, t, func() string {
		got := text(call(ctx, t, sp.cs, name, nil))
		if !strings.Contains(got, "(2 total)") || !strings.Contains(got, "URI: file:///tmp/e2e-root-two") {
			return fmt.Sprintf("%s = %q, want both roots", name, got)
		}
		return ""
	})
	if got, want := text(call(ctx, t, sp.cs, "alpha__roots", nil)), "alpha: roots file:///tmp/e2e-root-one,file:///tmp/e2e-root-two"; got != want {
		t.Errorf("alpha__roots after AddRoots = %q, want %q", got, want)
	}
}

func TestEverythingSubscriptions(t *testing.T) {
	t.Parallel()
	rec := newRecorder("e2e")
	sp := startStdioClient(t, writeConfig(t, everythingServer(t)), rec.client(), protocolVersion)
	ctx := testCtx(t)
	const toggle = "everything__toggle-subscriber-updates"
	waitTool(ctx, t, sp.cs, toggle)
	// server-everything logs the URIs it is asked to (un)subscribe: the logs
	// show what reached it.
	if err := sp.cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
		t.Fatalf("logging/setLevel: %v", err)
	}

	const prefix = "everything+demo://resource/static/document/"
	var uri string
	for r, err := range sp.cs.Resources(ctx, nil) {
		if err != nil {
			t.Fatalf("resources/list: %v", err)
		}
		if strings.HasPrefix(r.URI, prefix) {
			uri = r.URI
			break
		}
	}
	if uri == "" {
		t.Fatalf("no resource listed under %s", prefix)
	}
	original := strings.TrimPrefix(uri, "everything+")
	logged := func(sub string) func() bool {
		return func() bool {
			return slices.ContainsFunc(rec.logs, func(l mcp.LoggingMessageParams) bool {
				s, _ := l.Data.(string)
				return strings.Contains(s, sub)
			})
		}
	}

	if err := sp.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
		t.Fatalf("subscribe %s: %v", uri, err)
	}
	rec.await(ctx, t, "server-everything logging the subscription to "+original,
		logged("Received Subscribe Resource request for URI: "+original+" "))
	if res := call(ctx, t, sp.cs, toggle, nil); res.IsError {
		t.Fatalf("%s: %q", toggle, text(res))
	}
	t.Cleanup(func() { _, _ = sp.cs.CallTool(ctx, &mcp.CallToolParams{Name: toggle}) })
	rec.await(ctx, t, "notifications/resources/updated", func() bool { return len(rec.updated) > 0 })
	rec.snapshot(func() {
		for _, u := range rec.updated {
			if u != uri {
				t.Errorf("resources/updated for %q, want only %q (the rewritten URI)", u, uri)
			}
		}
	})

	if err := sp.cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri}); err != nil {
		t.Fatalf("unsubscribe %s: %v", uri, err)
	}
	rec.await(ctx, t, "server-everything logging the unsubscription from "+original,
		logged("Received Unsubscribe Resource request: "+original+" "))
}

func TestEverythingCompletions(t *testing.T) {
	t.Parallel()
	sp := startStdio(t, writeConfig(t, everythingServer(t)))
	ctx := testCtx(t)

	const template = "everything+demo://resource/dynamic/text/{resourceId}"
	var templates []string
	for rt, err := range sp.cs.ResourceTemplates(ctx, nil) {
		if err != nil {
			t.Fatalf("resources/templates/list: %v", err)
		}
		templates = append(templates, rt.URITemplate)
	}
	if !slices.Contains(templates, template) {
		t.Fatalf("template %s not listed: %v", template, templates)
	}

	prompt := &mcp.CompleteReference{Type: "ref/prompt", Name: "everything__completable-prompt"}
	tests := []struct {
		name string
		ref  *mcp.CompleteReference
		arg  mcp.CompleteParamsArgument
		ctx  *mcp.CompleteContext
		want []string
	}{
		{name: "prompt argument", ref: prompt,
			arg: mcp.CompleteParamsArgument{Name: "department", Value: "E"}, want: []string{"Engineering"}},
		{name: "prompt argument with context", ref: prompt,
			arg: mcp.CompleteParamsArgument{Name: "name", Value: ""}, ctx: &mcp.CompleteContext{Arguments: map[string]string{"department": "Sales"}},
			want: []string{"David", "Eve", "Frank"}},
		{name: "resource template", ref: &mcp.CompleteReference{Type: "ref/resource", URI: template},
			arg: mcp.CompleteParamsArgument{Name: "resourceId", Value: "7"}, want: []string{"7"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cr, err := sp.cs.Complete(ctx, &mcp.CompleteParams{Ref: tt.ref, Argument: tt.arg, Context: tt.ctx})
			if err != nil {
				t.Fatalf("completion/complete: %v", err)
			}
			if diff := cmp.Diff(tt.want, cr.Completion.Values); diff != "" {
				t.Errorf("values (-want +got):\n%s", diff)
			}
		})
	}
}

func TestListChanged(t *testing.T) {
	t.Parallel()
	rec := newRecorder("e2e")
	// The tool that toggle adds is new, which the default pin
	// (quarantine) would hold for review (pin_test.go); this test is about
	// relaying list_changed, so it is served and only flagged.
	cfg := "pin = \"warn\"\n" + everythingServer(t) + fixture("alpha", []string{"-tools", "echo", "-extra", "toggle"})
	sp := startStdioClient(t, writeConfig(t, cfg), rec.client(), protocolVersion)
	ctx := testCtx(t)

	t.Run("tools", func(t *testing.T) {
		waitTool(ctx, t, sp.cs, "alpha__toggle")
		for i, want := range []struct {
			text   string
			listed bool
		}{{"alpha: toggled added", true}, {"alpha: toggled removed", false}} {
			wantListed := want.listed
			var before int
			rec.snapshot(func() { before = rec.toolsChanged })
			if got := text(call(ctx, t, sp.cs, "alpha__toggle", nil)); got != want.text {
				t.Fatalf("alpha__toggle = %q, want %q", got, want.text)
			}
			rec.await(ctx, t, fmt.Sprintf("notifications/tools/list_changed after toggle %d", i+1),
				func() bool { return rec.toolsChanged > before })
			eventually(ctx, t, func() string {
				tools := listTools(ctx, t, sp.cs)
				if listed := tools["alpha__toggled"] != nil; listed != wantListed {
					return fmt.Sprintf("after toggle %d, alpha__toggled listed = %v, want %v: %v", i+1, listed, wantListed, toolNames(tools))
				}
				return ""
			})
			if wantListed {
				if got, want := text(call(ctx, t, sp.cs, "alpha__toggled", nil)), "alpha: toggled"; got != want {
					t.Errorf("alpha__toggled = %q, want %q", got, want)
				}
			}
		}
	})

	t.Run("resources", func(t *testing.T) {
		// gzip-file-as-resource registers a session resource, which
		// server-everything announces with resources/list_changed.
		const name = "everything__gzip-file-as-resource"
		waitTool(ctx, t, sp.cs, name)
		const uri = "everything+demo://resource/session/e2e.txt.gz"
		// A session is told of changes only in lists it has listed.
		for _, err := range sp.cs.Resources(ctx, nil) {
			if err != nil {
				t.Fatalf("resources/list: %v", err)
			}
		}
		var before int
		rec.snapshot(func() { before = rec.resourcesChanged })
		res := call(ctx, t, sp.cs, name, map[string]any{
			"name": "e2e.txt.gz", "data": "data:text/plain;base64,aGVsbG8gZTJl", "outputType": "resourceLink",
		})
		var links []string
		for _, c := range res.Content {
			if l, ok := c.(*mcp.ResourceLink); ok {
				links = append(links, l.URI)
			}
		}
		if diff := cmp.Diff([]string{uri}, links); diff != "" || res.IsError {
			t.Errorf("%s resource links (-want +got):\n%s\nresult: %v (isError %v)", name, diff, texts(res.Content), res.IsError)
		}
		rec.await(ctx, t, "notifications/resources/list_changed", func() bool { return rec.resourcesChanged > before })
		eventually(ctx, t, func() string {
			var uris []string
			for r, err := range sp.cs.Resources(ctx, nil) {
				if err != nil {
					t.Fatalf("resources/list: %v", err)
				}
				uris = append(uris, r.URI)
			}
			if !slices.Contains(uris, uri) {
				return fmt.Sprintf("%s not listed: %v", uri, uris)
			}
			return ""
		})
		rr, err := sp.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		if err != nil {
			t.Fatalf("read %s: %v", uri, err)
		}
		if len(rr.Contents) != 1 || rr.Contents[0].URI != uri || len(rr.Contents[0].Blob) == 0 {
			t.Errorf("read %s = %+v, want one blob under the same URI", uri, rr.Contents)
		}
	})
}

func TestLogging(t *testing.T) {
	t.Parallel()
	rec := newRecorder("e2e")
	cfg := everythingServer(t) + fixture("alpha", []string{"-tools", "echo", "-extra", "log"})
	sp := startStdioClient(t, writeConfig(t, cfg), rec.client(), protocolVersion)
	ctx := testCtx(t)
	const toggle = "everything__toggle-simulated-logging"
	waitTool(ctx, t, sp.cs, toggle)
	waitTool(ctx, t, sp.cs, "alpha__log")
	if err := sp.cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
		t.Fatalf("logging/setLevel: %v", err)
	}

	t.Run("everything", func(t *testing.T) {
		if res := call(ctx, t, sp.cs, toggle, nil); res.IsError {
			t.Fatalf("%s: %q", toggle, text(res))
		}
		t.Cleanup(func() { _, _ = sp.cs.CallTool(ctx, &mcp.CallToolParams{Name: toggle}) })
		rec.await(ctx, t, "a simulated log message", func() bool {
			return slices.ContainsFunc(rec.logs, func(l mcp.LoggingMessageParams) bool {
				s, _ := l.Data.(string)
				return strings.Contains(s, "message")
			})
		})
		rec.snapshot(func() {
			for _, l := range rec.logs {
				if s, _ := l.Data.(string); strings.Contains(s, "message") && l.Logger != "everything" && !strings.HasPrefix(l.Logger, "everything/") {
					t.Errorf("log message %q has logger %q, want everything or everything/…", s, l.Logger)
				}
			}
		})
	})

	t.Run("fixture", func(t *testing.T) {
		call(ctx, t, sp.cs, "alpha__log", map[string]any{"level": "debug", "logger": "lg", "data": "fixture debug line"})
		var got mcp.LoggingMessageParams
		rec.await(ctx, t, "the fixture's log message", func() bool {
			i := slices.IndexFunc(rec.logs, func(l mcp.LoggingMessageParams) bool { return l.Data == "fixture debug line" })
			if i >= 0 {
				got = rec.logs[i]
			}
			return i >= 0
		})
		if got.Logger != "alpha/lg" || got.Level != "debug" {
			t.Errorf("fixture log: logger %q level %q, want alpha/lg debug", got.Logger, got.Level)
		}
	})
}

// TestLoggingLevelBeforeUpstreamUp sets the level while the upstream is still
// starting: it must still apply to that upstream, whose SDK sends nothing
// until a level is set.
func TestLoggingLevelBeforeUpstreamUp(t *testing.T) {
	t.Parallel()
	rec := newRecorder("e2e")
	cfg := fixture("slow", []string{"-mode", "slowstart", "-delay", "1500ms", "-tools", "echo", "-extra", "log"})
	sp := startStdioClient(t, writeConfig(t, cfg), rec.client(), protocolVersion)
	ctx := testCtx(t)
	if err := sp.cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
		t.Fatalf("logging/setLevel: %v", err)
	}
	waitTool(ctx, t, sp.cs, "slow__log")
	call(ctx, t, sp.cs, "slow__log", map[string]any{"level": "info", "data": "after a slow start"})
	rec.await(ctx, t, "the log message of a server that came up after logging/setLevel", func() bool {
		return slices.ContainsFunc(rec.logs, func(l mcp.LoggingMessageParams) bool { return l.Data == "after a slow start" })
	})
}

// TestProgressLastNotification calls the fixture's progress tool, which sends
// its last notification right before its result: every notification must
// still reach the client, with the client's own token (here a number), at
// 2025-11-25 and 2026-07-28, over stdio and HTTP (the lean paths: the
// call's event stream).
func TestProgressLastNotification(t *testing.T) {
	t.Parallel()
	for _, tr := range transports {
		for _, version := range []string{protocolVersion, modernVersion} {
			t.Run(tr.name+"/"+version, func(t *testing.T) {
				t.Parallel()
				testProgressLast(t, tr.http, version)
			})
		}
	}
}

func testProgressLast(t *testing.T, overHTTP bool, version string) {
	rec := newRecorder("e2e")
	cfg := writeConfig(t, fixture("alpha", []string{"-tools", "echo", "-extra", "progress"}))
	var cs *mcp.ClientSession
	if overHTTP {
		cs = connectHTTPClient(t, startHTTP(t, cfg), rec.client(), version)
	} else {
		cs = startStdioClient(t, cfg, rec.client(), version).cs
	}
	if v := cs.InitializeResult().ProtocolVersion; v != version {
		t.Fatalf("negotiated %s, want %s", v, version)
	}
	ctx := testCtx(t)
	waitTool(ctx, t, cs, "alpha__progress")
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{
		Name:      "alpha__progress",
		Arguments: map[string]any{"steps": 3, "tag": "p"},
		Meta:      mcp.Meta{"progressToken": 42},
	})
	if err != nil {
		t.Fatalf("call alpha__progress: %v", err)
	}
	if got := text(res); !strings.HasPrefix(got, "alpha: progress p done, token ") || res.IsError {
		t.Errorf("alpha__progress = %q (isError %v)", got, res.IsError)
	}
	// Waits for 3; the diff below says what arrived.
	rec.waitFor(ctx, awaitBound, func() bool { return len(rec.progress) >= 3 })
	var got []string
	rec.snapshot(func() {
		for _, p := range rec.progress {
			got = append(got, fmt.Sprintf("%v %v/%v %s", p.ProgressToken, p.Progress, p.Total, p.Message))
		}
	})
	want := []string{"42 1/3 p 1", "42 2/3 p 2", "42 3/3 p 3"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("progress notifications (-want +got):\n%s", diff)
	}
}
