package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestUpstreamListChangedPassedOn: an upstream's own tools/list_changed
// reaches a client that listed even when the merged list did not change (the
// server registered the same tool again), in both eras: a legacy client over
// stdio and a 2026-07-28 client with subscriptions/listen open over HTTP. A
// burst of them still reaches the client coalesced, as a few.
func TestUpstreamListChangedPassedOn(t *testing.T) {
	t.Parallel()
	cfg := writeConfig(t, fixture("alpha", []string{"-tools", "echo", "-extra", "renotify"}))

	t.Run("legacy over stdio", func(t *testing.T) {
		t.Parallel()
		ch := newChanges("e2e-renotify")
		sp := startStdioClient(t, cfg, ch.client(), protocolVersion)
		ctx := testCtx(t)
		listTools(ctx, t, sp.cs)
		ch.waitCount("tools", 1, noNotifyBound) // the start's own, if any, goes first
		before := ch.counts()["tools"]
		if got := text(call(ctx, t, sp.cs, "alpha__renotify", nil)); got != "alpha: renotified 1" {
			t.Fatalf("alpha__renotify = %q", got)
		}
		if !ch.waitCount("tools", before+1, awaitBound) {
			t.Fatalf("no notifications/tools/list_changed within %s of the upstream's (its list unchanged)", awaitBound)
		}

		// A burst of 20, 5ms apart (each its own upstream notification),
		// arrives as a few: one per coalescing window (200ms) at most. The
		// bound leaves room for a loaded machine stretching the 100ms burst
		// twentyfold; uncoalesced it would be 20.
		ch.waitCount("tools", 1000, noNotifyBound) // let the last one go
		before = ch.counts()["tools"]
		if got := text(call(ctx, t, sp.cs, "alpha__renotify", map[string]any{"count": 20, "delay_ms": 5})); got != "alpha: renotified 20" {
			t.Fatalf("alpha__renotify burst = %q", got)
		}
		if !ch.waitCount("tools", before+1, awaitBound) {
			t.Fatalf("no notifications/tools/list_changed after a burst of 20")
		}
		ch.waitCount("tools", 1000, noNotifyBound) // let the burst's go
		got := ch.counts()["tools"] - before
		t.Logf("a burst of 20 upstream tools/list_changed: %d notifications", got)
		if got > 10 {
			t.Errorf("a burst of 20 upstream list_changed reached the client as %d notifications, want a coalesced few", got)
		}
	})

	t.Run("2026-07-28 listen over HTTP", func(t *testing.T) {
		t.Parallel()
		changed := make(chan struct{}, 16)
		client := mcp.NewClient(&mcp.Implementation{Name: "e2e-renotify-modern", Version: "0"}, &mcp.ClientOptions{
			// With this handler the client keeps a subscriptions/listen
			// for tools/list_changed open, opened in the background.
			ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
				select {
				case changed <- struct{}{}:
				default:
				}
			},
		})
		cs := connectHTTPClient(t, startHTTP(t, cfg), client, modernVersion)
		ctx := testCtx(t)
		if v := cs.InitializeResult().ProtocolVersion; v != modernVersion {
			t.Fatalf("negotiated %q, want %s", v, modernVersion)
		}
		waitTool(ctx, t, cs, "alpha__renotify")
		drain := time.After(noNotifyBound) // the start's own, if any
		for draining := true; draining; {
			select {
			case <-changed:
			case <-drain:
				draining = false
			}
		}
		// The listen may open after the first call: call until one arrives.
		deadline := time.After(awaitBound)
		for {
			if got := text(call(ctx, t, cs, "alpha__renotify", nil)); got != "alpha: renotified 1" {
				t.Fatalf("alpha__renotify = %q", got)
			}
			select {
			case <-changed:
				return
			case <-time.After(300 * time.Millisecond):
			case <-deadline:
				t.Fatalf("no notifications/tools/list_changed on the listen stream within %s of upstream ones (list unchanged)", awaitBound)
			}
		}
	})
}
