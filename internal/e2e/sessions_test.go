//lint:file-ignore SA1019 sampling is deprecated as of protocol 2026-07-28, but Manifold serves clients on 2024-11-05 to 2025-11-25, for whom it is part of the protocol.

package e2e

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Two HTTP sessions share one upstream: what comes back from it (results,
// progress, server->client requests, resource updates) reaches the session it
// belongs to, and only that one.

// upstreamTokenRE finds the progress token the fixture's progress tool saw.
var upstreamTokenRE = regexp.MustCompile(`token (.+)$`)

func TestTwoHTTPSessionsShareAnUpstream(t *testing.T) {
	t.Parallel()
	// Sampling and elicitation reach a client only from a process of its own
	// (isolation = "session"): a shared one is not offered them over HTTP.
	cfg := fixture("alpha", []string{"-tools", "echo", "-extra", "progress,sample,elicit,touch"}) +
		fixture("beta", []string{"-tools", "echo", "-extra", "sample,elicit"}, `isolation = "session"`)
	hp := startHTTP(t, writeConfig(t, cfg))
	ctx := testCtx(t)
	recs := map[string]*recorder{"A": newRecorder("A"), "B": newRecorder("B")}
	sessions := map[string]*mcp.ClientSession{}
	for name, rec := range recs {
		sessions[name] = connectHTTPClient(t, hp, rec.client(), protocolVersion)
	}
	waitTool(ctx, t, sessions["A"], "alpha__sample")
	names := []string{"A", "B"}

	t.Run("concurrent calls get their own results", func(t *testing.T) {
		const n = 10
		var wg sync.WaitGroup
		for _, name := range names {
			for i := range n {
				wg.Go(func() {
					msg := fmt.Sprintf("%s-%d", name, i)
					res, err := sessions[name].CallTool(ctx, &mcp.CallToolParams{Name: "alpha__echo", Arguments: map[string]any{"message": msg}})
					if err != nil {
						t.Errorf("session %s: call alpha__echo: %v", name, err)
						return
					}
					if got, want := text(res), "alpha: "+msg; got != want {
						t.Errorf("session %s: alpha__echo(%q) = %q, want %q", name, msg, got, want)
					}
				})
			}
		}
		wg.Wait()
	})

	t.Run("progress with the same token goes to its own session", func(t *testing.T) {
		const token = "same-token"
		upstreamTokens := make(map[string]string)
		var mu sync.Mutex
		var wg sync.WaitGroup
		for _, name := range names {
			wg.Go(func() {
				res, err := sessions[name].CallTool(ctx, &mcp.CallToolParams{
					Name:      "alpha__progress",
					Arguments: map[string]any{"steps": 3, "tag": name, "delay_ms": 50},
					Meta:      mcp.Meta{"progressToken": token},
				})
				if err != nil {
					t.Errorf("session %s: call alpha__progress: %v", name, err)
					return
				}
				m := upstreamTokenRE.FindStringSubmatch(text(res))
				if m == nil || !strings.HasPrefix(text(res), "alpha: progress "+name+" done") {
					t.Errorf("session %s: alpha__progress = %q", name, text(res))
					return
				}
				mu.Lock()
				upstreamTokens[name] = m[1]
				mu.Unlock()
			})
		}
		wg.Wait()
		if t.Failed() {
			return
		}
		if upstreamTokens["A"] == upstreamTokens["B"] || upstreamTokens["A"] == `"`+token+`"` {
			t.Errorf("upstream progress tokens A %s, B %s: want the proxy's own, distinct per call", upstreamTokens["A"], upstreamTokens["B"])
		}
		deadline := time.Now().Add(awaitBound)
		for _, name := range names {
			rec := recs[name]
			// Waits for 3; the diff below says what arrived.
			rec.waitFor(ctx, time.Until(deadline), func() bool { return len(rec.progress) >= 3 })
			var got []string
			rec.snapshot(func() {
				for _, p := range rec.progress {
					got = append(got, fmt.Sprintf("%v %v/%v %s", p.ProgressToken, p.Progress, p.Total, p.Message))
				}
			})
			want := []string{
				fmt.Sprintf("%s 1/3 %s 1", token, name),
				fmt.Sprintf("%s 2/3 %s 2", token, name),
				fmt.Sprintf("%s 3/3 %s 3", token, name),
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("session %s: progress notifications (-want +got):\n%s", name, diff)
			}
		}
	})

	t.Run("sampling goes to the session that called", func(t *testing.T) {
		for i, name := range names {
			res := call(ctx, t, sessions[name], "beta__sample", map[string]any{"prompt": "from " + name})
			if got, want := text(res), "beta: sampled model=e2e-model text="+sampleAnswer(name); got != want || res.IsError {
				t.Errorf("session %s: beta__sample = %q (isError %v), want %q", name, got, res.IsError, want)
			}
			// After A's call A has answered once and B never; after B's,
			// each once.
			for j, other := range names {
				want := 0
				if j <= i {
					want = 1
				}
				var got int
				recs[other].snapshot(func() { got = len(recs[other].samples) })
				if got != want {
					t.Errorf("after session %s's call, session %s answered %d sampling request(s), want %d", name, other, got, want)
				}
			}
		}
	})

	t.Run("elicitation goes to the session that called", func(t *testing.T) {
		res := call(ctx, t, sessions["A"], "beta__elicit", map[string]any{"message": "for A"})
		if got := text(res); res.IsError || !strings.Contains(got, `"answer":"from A"`) {
			t.Errorf("session A: beta__elicit = %q (isError %v), want A's answer", got, res.IsError)
		}
		var gotA []string
		var nB int
		recs["A"].snapshot(func() {
			for _, e := range recs["A"].elicits {
				gotA = append(gotA, e.Message)
			}
		})
		recs["B"].snapshot(func() { nB = len(recs["B"].elicits) })
		if diff := cmp.Diff([]string{"[beta] for A"}, gotA); diff != "" {
			t.Errorf("session A: elicitation messages (-want +got):\n%s", diff)
		}
		if nB != 0 {
			t.Errorf("session B answered %d elicitation(s), want 0", nB)
		}
	})

	t.Run("resource subscriptions are per session", func(t *testing.T) {
		const uri = "alpha+fixture://alpha/readme.txt"
		for _, name := range names {
			if err := sessions[name].Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
				t.Fatalf("session %s: subscribe %s: %v", name, uri, err)
			}
		}
		updates := func(name string) []string {
			var u []string
			recs[name].snapshot(func() { u = append(u, recs[name].updated...) })
			return u
		}
		call(ctx, t, sessions["A"], "alpha__touch", nil)
		for _, name := range names {
			rec := recs[name]
			rec.await(ctx, t, "session "+name+": resources/updated", func() bool { return len(rec.updated) >= 1 })
		}
		// A leaves; B stays subscribed, so the upstream subscription must
		// stay too.
		if err := sessions["A"].Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri}); err != nil {
			t.Fatalf("session A: unsubscribe: %v", err)
		}
		call(ctx, t, sessions["B"], "alpha__touch", nil)
		recs["B"].await(ctx, t, "session B: a second resources/updated", func() bool { return len(recs["B"].updated) >= 2 })
		if diff := cmp.Diff([]string{uri, uri}, updates("B")); diff != "" {
			t.Errorf("session B: resources/updated (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]string{uri}, updates("A")); diff != "" {
			t.Errorf("session A (unsubscribed after the first): resources/updated (-want +got):\n%s", diff)
		}
		if err := sessions["B"].Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri}); err != nil {
			t.Errorf("session B: unsubscribe: %v", err)
		}
	})
}
