package e2e

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The first list and list_changed (issue 10, items 3 and 4): the first list
// does not wait for a slow server (clients give a server about a second), and
// a session is told of changes only in what it has listed, once per burst.

// noNotifyBound is how long a test waits to see that a notification does NOT
// come. Where one would come, it comes within milliseconds of the change.
const noNotifyBound = time.Second

// changes counts the list_changed notifications one client receives.
type changes struct {
	mu    sync.Mutex
	n     map[string]int // guarded by mu: "tools", "prompts", "resources" -> count
	wake  chan struct{}
	title string
}

func newChanges(title string) *changes {
	return &changes{n: map[string]int{}, wake: make(chan struct{}, 1), title: title}
}

func (c *changes) add(kind string) {
	c.mu.Lock()
	c.n[kind]++
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// counts returns a copy of the counts.
func (c *changes) counts() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]int{}
	for k, v := range c.n {
		if v > 0 {
			out[k] = v
		}
	}
	return out
}

// waitCount waits up to bound until kind was notified at least n times and
// reports whether it was.
func (c *changes) waitCount(kind string, n int, bound time.Duration) bool {
	deadline := time.NewTimer(bound)
	defer deadline.Stop()
	for {
		c.mu.Lock()
		got := c.n[kind]
		c.mu.Unlock()
		if got >= n {
			return true
		}
		select {
		case <-c.wake:
		case <-deadline.C:
			return false
		}
	}
}

// client returns an MCP client that counts into c.
func (c *changes) client() *mcp.Client {
	return mcp.NewClient(&mcp.Implementation{Name: c.title, Version: "0"}, &mcp.ClientOptions{
		ToolListChangedHandler:     func(context.Context, *mcp.ToolListChangedRequest) { c.add("tools") },
		PromptListChangedHandler:   func(context.Context, *mcp.PromptListChangedRequest) { c.add("prompts") },
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) { c.add("resources") },
	})
}

func promptNames(ctx context.Context, t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	var names []string
	for p, err := range cs.Prompts(ctx, nil) {
		if err != nil {
			t.Fatalf("prompts/list: %v", err)
		}
		names = append(names, p.Name)
	}
	slices.Sort(names)
	return names
}

// TestFirstListDoesNotWaitForSlowServer: with the default first_list_wait,
// the first tools/list and prompts/list of a client that gives a server
// about a second (Codex: its clientInfo name) answer with the server that
// is up while another one, never listed before, still starts (for 8 s); the
// client then gets list_changed and finds the slow server's tools and
// prompts.
func TestFirstListDoesNotWaitForSlowServer(t *testing.T) {
	t.Parallel()
	cfg := "# first_list_wait is left at its default\n" +
		fixture("alpha", []string{"-tools", "echo"}) +
		fixture("slow", []string{"-mode", "slowstart", "-delay", "8s", "-tools", "echo"}, `startup_timeout = "60s"`)
	hp := startHTTP(t, writeConfig(t, cfg))
	awaitStderr(t, hp.proc, 1, "server up", "upstream=alpha")
	ch := newChanges("codex-mcp-client")
	cs := connectHTTPClient(t, hp, ch.client(), protocolVersion)
	ctx := testCtx(t)

	if got := toolNames(listTools(ctx, t, cs)); !slices.Equal(got, []string{"alpha__echo"}) {
		t.Fatalf("first tools/list = %v, want only alpha's tool (slow is still starting)", got)
	}
	if got := promptNames(ctx, t, cs); !slices.Equal(got, []string{"alpha__greet"}) {
		t.Errorf("first prompts/list = %v, want only alpha's prompt", got)
	}
	for _, kind := range []string{"tools", "prompts"} {
		if !ch.waitCount(kind, 1, awaitBound) {
			t.Fatalf("no notifications/%s/list_changed within %s of the slow server's start", kind, awaitBound)
		}
	}
	if got, want := toolNames(listTools(ctx, t, cs)), []string{"alpha__echo", "slow__echo"}; !slices.Equal(got, want) {
		t.Errorf("tools/list after list_changed = %v, want %v", got, want)
	}
	if got, want := promptNames(ctx, t, cs), []string{"alpha__greet", "slow__greet"}; !slices.Equal(got, want) {
		t.Errorf("prompts/list after list_changed = %v, want %v", got, want)
	}
}

// TestFirstListWaitConfigurable: first_list_wait = "20s" makes the first list
// wait for a server that takes 2 s to start, over stdio.
func TestFirstListWaitConfigurable(t *testing.T) {
	t.Parallel()
	cfg := "first_list_wait = \"20s\"\n" +
		fixture("alpha", []string{"-tools", "echo"}) +
		fixture("slow", []string{"-mode", "slowstart", "-delay", "2s", "-tools", "echo"})
	sp := startStdio(t, writeConfig(t, cfg))
	if got, want := toolNames(listTools(testCtx(t), t, sp.cs)), []string{"alpha__echo", "slow__echo"}; !slices.Equal(got, want) {
		t.Errorf("first tools/list = %v, want %v (first_list_wait covers slow's start)", got, want)
	}
}

// TestListChangedOnlyAfterList: over stdio, no list_changed reaches a client
// before it listed (the servers start right after its initialize), a kind it
// never listed is never notified, and changes after a list are notified.
// (That a burst gives one notification is TestListedKindsOffer, in proxy.)
func TestListChangedOnlyAfterList(t *testing.T) {
	t.Parallel()
	// pin = "warn": the toggled tool is new, which the default pin would
	// hold for review (pin_test.go); this test is about list_changed.
	cfg := "pin = \"warn\"\n" + fixture("alpha", []string{"-tools", "echo", "-extra", "toggle"}) +
		fixture("beta", []string{"-mode", "slowstart", "-delay", "1s", "-tools", "echo"})
	ch := newChanges("e2e-list-changed")
	sp := startStdioClient(t, writeConfig(t, cfg), ch.client(), protocolVersion)
	ctx := testCtx(t)

	// A call to beta's tool waits for beta's start: by its answer both
	// servers have joined the catalog, which the SDK would announce.
	if got := text(call(ctx, t, sp.cs, "beta__echo", map[string]any{"message": "up"})); got != "beta: up" {
		t.Fatalf("beta__echo = %q, want %q", got, "beta: up")
	}
	ch.waitCount("tools", 1, noNotifyBound)
	if got := ch.counts(); len(got) != 0 {
		t.Fatalf("list_changed before the client listed anything: %v", got)
	}

	listTools(ctx, t, sp.cs)
	for i, want := range []string{"alpha: toggled added", "alpha: toggled removed", "alpha: toggled added"} {
		if got := text(call(ctx, t, sp.cs, "alpha__toggle", nil)); got != want {
			t.Fatalf("toggle %d = %q, want %q", i+1, got, want)
		}
	}
	if !ch.waitCount("tools", 1, awaitBound) {
		t.Fatalf("no notifications/tools/list_changed within %s of three toggles", awaitBound)
	}
	eventually(ctx, t, func() string {
		if tools := listTools(ctx, t, sp.cs); tools["alpha__toggled"] == nil {
			return fmt.Sprintf("alpha__toggled not listed after three toggles: %v", toolNames(tools))
		}
		return ""
	})
	ch.waitCount("tools", 1000, noNotifyBound) // let the burst's notification go
	before := ch.counts()["tools"]
	if got := text(call(ctx, t, sp.cs, "alpha__toggle", nil)); got != "alpha: toggled removed" {
		t.Fatalf("fourth toggle = %q", got)
	}
	if !ch.waitCount("tools", before+1, awaitBound) {
		t.Fatalf("no notifications/tools/list_changed after the fourth toggle; got %v", ch.counts())
	}
	if got := ch.counts(); got["prompts"] != 0 || got["resources"] != 0 {
		t.Errorf("notified of prompts or resources, which the client never listed: %v", got)
	}
}

// TestListChangedPerSession: over HTTP, of two sessions only the one that
// listed tools is told that they changed.
func TestListChangedPerSession(t *testing.T) {
	t.Parallel()
	hp := startHTTP(t, writeConfig(t, fixture("alpha", []string{"-tools", "echo", "-extra", "toggle"})))
	lister, silent := newChanges("e2e-lister"), newChanges("e2e-silent")
	csL := connectHTTPClient(t, hp, lister.client(), protocolVersion)
	csS := connectHTTPClient(t, hp, silent.client(), protocolVersion)
	ctx := testCtx(t)
	listTools(ctx, t, csL)
	if got := text(call(ctx, t, csS, "alpha__toggle", nil)); got != "alpha: toggled added" {
		t.Fatalf("toggle = %q", got)
	}
	if !lister.waitCount("tools", 1, awaitBound) {
		t.Fatalf("the session that listed got no notifications/tools/list_changed within %s", awaitBound)
	}
	silent.waitCount("tools", 1, noNotifyBound)
	if got := silent.counts(); len(got) != 0 {
		t.Errorf("the session that never listed was notified: %v", got)
	}
}
