//lint:file-ignore SA1019 sampling is deprecated as of protocol 2026-07-28, but Manifold serves clients on 2024-11-05 to 2025-11-25, for whom it is part of the protocol.

package e2e

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A shared server over HTTP (isolation = "shared", the default) asks its
// only caller: a sampling or elicitation request it sends while exactly one
// client has a request in flight on it goes to that client, on that call's
// stream; with none or several it is refused, naming isolation = "session".

// TestSharedServerAsksItsOnlyCaller: one client at a time calls tools of
// shared servers that ask for sampling and elicitation during the call; the
// request reaches that client and its answer reaches the server. The
// servers are one of the initialize era and one that speaks both eras
// (spoken to in the initialize era, in which its own requests work), and
// the clients one of 2025-11-25 (on the call's stream: it opens no
// standalone stream), one of 2026-07-28 (its call is bridged: the request
// becomes an input_required round), and one that declared neither
// capability (refused, naming it).
func TestSharedServerAsksItsOnlyCaller(t *testing.T) {
	t.Parallel()
	cfg := fixture("alpha", []string{"-tools", "echo", "-extra", "sample,elicit"}) +
		fixture("dual", []string{"-era", "dual", "-tools", "echo", "-extra", "sample,elicit"}, `probe_timeout = "30s"`)
	hp := startHTTP(t, writeConfig(t, cfg))
	ctx := testCtx(t)

	for _, client := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(client, func(t *testing.T) {
			rec := newRecorder("A")
			var cs *mcp.ClientSession
			if client == protocolVersion {
				cs = connectHTTPNoStandalone(t, hp, rec.client())
			} else {
				cs = connectHTTPClient(t, hp, rec.client(), modernVersion)
			}
			waitTool(ctx, t, cs, "dual__elicit")
			for _, server := range []string{"alpha", "dual"} {
				res := call(ctx, t, cs, server+"__sample", map[string]any{"prompt": "A's prompt"})
				if got, want := text(res), server+": sampled model=e2e-model text="+sampleAnswer("A"); got != want || res.IsError {
					t.Errorf("%s__sample = %q (isError %v), want %q", server, got, res.IsError, want)
				}
				res = call(ctx, t, cs, server+"__elicit", map[string]any{"message": "A's question"})
				if got, want := text(res), server+`: elicit action=accept content={"answer":"from A","name":"A"}`; got != want || res.IsError {
					t.Errorf("%s__elicit = %q (isError %v), want %q", server, got, res.IsError, want)
				}
			}
			rec.snapshot(func() {
				if len(rec.samples) != 2 || len(rec.elicits) != 2 {
					t.Fatalf("the client was asked %d sampling and %d elicitation requests, want 2 and 2", len(rec.samples), len(rec.elicits))
				}
				for i, server := range []string{"alpha", "dual"} {
					if s := rec.samples[i]; s.IncludeContext != "none" || len(s.Messages) != 1 || s.Messages[0].Content.(*mcp.TextContent).Text != "A's prompt" {
						t.Errorf("sampling request %d = %+v, want A's prompt with includeContext none", i, s)
					}
					if got, want := rec.elicits[i].Message, "["+server+"] A's question"; got != want {
						t.Errorf("elicitation %d says %q, want %q (the server that asks named)", i, got, want)
					}
				}
			})
		})
	}

	t.Run("a client that declared neither", func(t *testing.T) {
		bare := connectHTTPClient(t, hp, mcp.NewClient(&mcp.Implementation{Name: "bare", Version: "0"}, nil), protocolVersion)
		for _, tc := range []struct {
			tool, capName string
			args          map[string]any
		}{{"alpha__sample", "sampling", map[string]any{"prompt": "p"}}, {"alpha__elicit", "elicitation", map[string]any{"message": "m"}}} {
			got := callText(ctx, bare, tc.tool, tc.args)
			if want := `needs the client capability "` + tc.capName + `", which this client did not declare`; !strings.Contains(got, want) {
				t.Errorf("%s = %q, want it to say %q", tc.tool, got, want)
			}
		}
	})
}

// holder is a client whose sampling and elicitation handlers record every
// request and hold the ones that carry mark until release is closed (or
// the request ends); the others are answered at once, so that a request
// that reaches it by mistake shows in seen without blocking anyone.
type holder struct {
	mark    string
	asked   chan struct{} // signalled when a held request arrived
	release chan struct{}

	mu   sync.Mutex
	seen []string // guarded by mu: the prompt or message of every request
}

func newHolder(mark string) *holder {
	return &holder{mark: mark, asked: make(chan struct{}, 1), release: make(chan struct{})}
}

func (h *holder) ask(ctx context.Context, what string) {
	h.mu.Lock()
	h.seen = append(h.seen, what)
	h.mu.Unlock()
	if !strings.Contains(what, h.mark) {
		return
	}
	select {
	case h.asked <- struct{}{}:
	default:
	}
	select {
	case <-h.release:
	case <-ctx.Done():
	}
}

func (h *holder) requests() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.seen...)
}

func (h *holder) client() *mcp.Client {
	return mcp.NewClient(&mcp.Implementation{Name: "holder", Version: "0"}, &mcp.ClientOptions{
		CreateMessageHandler: func(ctx context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			what := ""
			if len(req.Params.Messages) > 0 {
				if tc, ok := req.Params.Messages[0].Content.(*mcp.TextContent); ok {
					what = tc.Text
				}
			}
			h.ask(ctx, what)
			return &mcp.CreateMessageResult{Role: "assistant", Model: "e2e-model", Content: &mcp.TextContent{Text: sampleAnswer("A")}}, nil
		},
		ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			h.ask(ctx, req.Params.Message)
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": "from A"}}, nil
		},
	})
}

// TestSharedServerNeverAsksTheWrongCaller: while client A's call of a
// shared server waits for A's answer to the server's question, client B (of
// 2025-11-25, declaring sampling and elicitation), client C (of 2026-07-28,
// declaring nothing: its calls take the lean path, without a session) and
// client D (of 2026-07-28, declaring roots only) call tools of the same
// server that ask too. Two clients then
// have calls in flight on it, so their questions cannot be attributed: each
// is refused with an error that names isolation = "session", and neither
// reaches A, whose own question and answer still make its call's result.
// With no call in flight, a question the server asks later reaches nobody.
func TestSharedServerNeverAsksTheWrongCaller(t *testing.T) {
	t.Parallel()
	cfg := fixture("alpha", []string{"-tools", "echo", "-extra", "sample,elicit,later"})
	hp := startHTTP(t, writeConfig(t, cfg))
	ctx := testCtx(t)
	hA := newHolder("A's")
	a := connectHTTPClient(t, hp, hA.client(), protocolVersion)
	recB := newRecorder("B")
	b := connectHTTPClient(t, hp, recB.client(), protocolVersion)
	c := connectHTTPClient(t, hp, mcp.NewClient(&mcp.Implementation{Name: "C", Version: "0"}, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}}), modernVersion)
	d := connectHTTPClient(t, hp, mcp.NewClient(&mcp.Implementation{Name: "D", Version: "0"}, nil), modernVersion) // declares roots: its calls go to the SDK
	waitTool(ctx, t, a, "alpha__elicit")

	asks := []struct {
		tool, want string
		args       func(who string) map[string]any
	}{
		{"alpha__sample", "text=" + sampleAnswer("A"), func(who string) map[string]any { return map[string]any{"prompt": who + " prompt"} }},
		{"alpha__elicit", `content={"answer":"from A"}`, func(who string) map[string]any { return map[string]any{"message": who + " question"} }},
	}
	var wantSeen []string
	for _, held := range asks {
		t.Run("while A answers "+held.tool, func(t *testing.T) {
			done := make(chan string, 1)
			go func() { done <- callText(ctx, a, held.tool, held.args("A's")) }()
			select {
			case <-hA.asked:
			case <-ctx.Done():
				t.Fatalf("A was not asked during its call of %s", held.tool)
			}
			for _, other := range asks {
				for who, cs := range map[string]*mcp.ClientSession{"B's": b, "C's": c, "D's": d} {
					got := callText(ctx, cs, other.tool, other.args(who))
					if !strings.Contains(got, "several clients have requests in flight on it") || !strings.Contains(got, `set isolation = "session"`) {
						t.Errorf("%s call of %s while A's call waits = %q, want it refused: several clients, set isolation = \"session\"", who, other.tool, got)
					}
				}
			}
			hA.release <- struct{}{}
			if got := <-done; !strings.Contains(got, held.want) {
				t.Errorf("A's %s = %q, want it to contain %q (A's answer, which reached the server)", held.tool, got, held.want)
			}
		})
		if p := held.args("A's"); p["prompt"] != nil {
			wantSeen = append(wantSeen, "A's prompt")
		} else {
			wantSeen = append(wantSeen, "[alpha] A's question")
		}
	}

	t.Run("outside any call", func(t *testing.T) {
		if res := call(ctx, t, a, "alpha__later", map[string]any{"action": "elicit", "delay_ms": 100, "data": "a late question"}); res.IsError {
			t.Fatalf("alpha__later: %q", text(res))
		}
		recB.waitFor(ctx, quietBound, func() bool { return len(recB.elicits) > 0 })
	})

	if got := hA.requests(); !slices.Equal(got, wantSeen) {
		t.Errorf("A was asked %q, want only its own %q", got, wantSeen)
	}
	recB.snapshot(func() {
		if len(recB.samples) != 0 || len(recB.elicits) != 0 {
			t.Errorf("B was asked %d sampling and %d elicitation requests, want none: %+v %+v", len(recB.samples), len(recB.elicits), recB.samples, recB.elicits)
		}
	})
}
