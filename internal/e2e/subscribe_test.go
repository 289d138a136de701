package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestSubscriptionLifecycle: the upstream is subscribed once however many
// clients subscribe, unsubscribed when the last client leaves without
// unsubscribing, and subscribed again when it restarts while a client still
// watches.
func TestSubscriptionLifecycle(t *testing.T) {
	t.Parallel()
	hp := startHTTP(t, writeConfig(t, fixture("alpha", []string{"-extra", "touch"})))
	ctx := testCtx(t)
	const uri = "alpha+fixture://alpha/readme.txt"
	count := func(what string) int {
		return strings.Count(hp.stderr.String(), "msg="+what+" fixture=alpha")
	}
	a := connectHTTP(t, hp)
	b := connectHTTP(t, hp)
	waitTool(ctx, t, a, "alpha__touch")
	for _, cs := range []*mcp.ClientSession{a, b} {
		if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
			t.Fatalf("subscribe: %v", err)
		}
	}
	waitFor(t, 10*time.Second, "the upstream subscription", func() bool { return count("subscribe") >= 1 })
	if n := count("subscribe"); n != 1 {
		t.Errorf("the upstream was subscribed %d times for two clients, want once", n)
	}

	// The server restarts: it is subscribed again, since b still watches.
	pid := text(call(ctx, t, b, "alpha__pid", nil))
	_ = call(ctx, t, a, "alpha__crash", nil)
	waitFor(t, 20*time.Second, "alpha back", func() bool {
		res := call(ctx, t, b, "alpha__pid", nil)
		return !res.IsError && text(res) != pid
	})
	waitFor(t, 10*time.Second, "the subscription renewed after the restart", func() bool { return count("subscribe") >= 2 })

	// a unsubscribes; b leaves without unsubscribing: the upstream is
	// unsubscribed once, when the last one is gone.
	if err := a.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri}); err != nil {
		t.Fatalf("unsubscribe: %v", err)
	}
	time.Sleep(300 * time.Millisecond)
	if n := count("unsubscribe"); n != 0 {
		t.Fatalf("the upstream was unsubscribed while client b still watches (%d times)", n)
	}
	_ = b.Close()
	waitFor(t, 10*time.Second, "the upstream unsubscribed after the last client left", func() bool { return count("unsubscribe") == 1 })
}
