package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manifold-mcp/manifold/proxy/era"
	"github.com/manifold-mcp/manifold/proxy/relay"
)

var errNoReplica = errors.New("no replica of that name listens")

// namedRelay is a RetryRelay that only has a name: ServeRetry is called
// directly.
type namedRelay string

func (n namedRelay) Replica() string { return string(n) }
func (namedRelay) ForwardRetry(context.Context, string, []byte, func([]byte)) ([]byte, error) {
	return nil, errNoReplica
}
func (namedRelay) ServeRetries(context.Context, func(context.Context, []byte, func([]byte)) []byte) {}

// nowhere drops a forwarded retry's progress.
func nowhere([]byte) {}

// quietRelay is a Relay that sends progress nowhere.
type quietRelay struct{}

func (quietRelay) Rebind(string, context.Context, *mcp.ServerSession, json.RawMessage) {}
func (quietRelay) RebindRemote(string, func(*mcp.ProgressNotificationParams))          {}
func (quietRelay) RememberElicitation(string, relay.Backend, *mcp.ServerSession)       {}

// TestServeRetryRefuses: a forwarded retry is served only when its state
// opens here, bound to the request the forwarding replica describes, and
// names a call parked on this replica: a state for another principal, one
// that names another replica (no forwarding on), one whose call is gone,
// and a message that is not a retry are each answered with -32602, and a
// parked call is resumed.
func TestServeRetryRefuses(t *testing.T) {
	br := New(Options{Retries: namedRelay("aaaa"), ErrNoReplica: errNoReplica, StateKey: []byte(strings.Repeat("k", 32)),
		Methods: relay.Methods, Relay: quietRelay{}}) // the forwarded retry's progress is rebound on it
	sealer, err := br.Sealer()
	if err != nil {
		t.Fatal(err)
	}
	seal := func(replica, call string) string {
		tok, err := sealer.Seal(era.State{Kind: era.Parked, Binding: testBind, Expires: time.Now().Add(time.Minute), Call: call, Round: 1, Replica: replica})
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	retry := func(principal, state string) []byte {
		st, _ := json.Marshal(state)
		msg, _ := json.Marshal(forwardedRetry{Name: testBind.Name, Server: testBind.Upstream, Principal: principal, Caps: &era.ClientCapsV2{ClientCapabilities: *elicitCaps()},
			Fields: map[string]json.RawMessage{"requestState": st, "inputResponses": json.RawMessage(`{"elicitation-1":{"action":"accept","content":{"a":"b"}}}`)}})
		return msg
	}
	refused := func(what string, out []byte, says string) {
		t.Helper()
		var a retryAnswer
		if err := json.Unmarshal(out, &a); err != nil || a.Error == nil || a.Error.Code != jsonrpc.CodeInvalidParams || !strings.Contains(a.Error.Message, says) {
			t.Errorf("%s: answered %s; want -32602 saying %q", what, out, says)
		}
	}
	ctx := t.Context()
	refused("another principal", br.ServeRetry(ctx, retry("anonymous:other/1", seal("aaaa", "pc-1")), nowhere), "belongs to another request")
	refused("another replica's call", br.ServeRetry(ctx, retry(testBind.Principal, seal("bbbb", "pc-1")), nowhere), "not one this proxy issued")
	refused("a call that is gone", br.ServeRetry(ctx, retry(testBind.Principal, seal("aaaa", "pc-gone")), nowhere), "no longer waiting")
	refused("not a retry", br.ServeRetry(ctx, []byte(`[1,2]`), nowhere), "could not be read")

	// A call parked here, asked one question: the forwarded retry's
	// answer reaches the server's question, and its result comes back.
	out := make(outcomes, 4)
	callCtx, pc, err := br.Park(ctx, testBind, elicitCaps(), time.Minute, out.finish)
	if err != nil {
		t.Fatal(err)
	}
	asked := make(chan json.RawMessage, 1)
	go func() {
		ans, _ := pc.Ask(callCtx, "elicitation/create", "form", map[string]string{"message": "?"})
		asked <- ans
	}()
	first := <-out
	var ir struct {
		RequestState string `json:"requestState"`
	}
	if err := json.Unmarshal(first.raw, &ir); err != nil || ir.RequestState == "" {
		t.Fatalf("first round = %s, %v", first.raw, first.err)
	}
	served := make(chan []byte, 1)
	go func() { served <- br.ServeRetry(ctx, retry(testBind.Principal, ir.RequestState), nowhere) }()
	select {
	case got := <-asked:
		if string(got) != `{"action":"accept","content":{"a":"b"}}` {
			t.Fatalf("the server's question got %s", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the forwarded retry's answer did not reach the server's question within 10s")
	}
	pc.Finish(json.RawMessage(`{"content":[]}`), nil)
	var a retryAnswer
	if err := json.Unmarshal(<-served, &a); err != nil || string(a.Result) != `{"content":[]}` {
		t.Fatalf("forwarded retry answered %+v, %v; want the call's result", a, err)
	}
}
