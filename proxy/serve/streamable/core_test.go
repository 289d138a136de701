package streamable

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manifold-mcp/manifold/policy"
	"github.com/manifold-mcp/manifold/proxy/observe"
	"github.com/manifold-mcp/manifold/proxy/session"
	"github.com/manifold-mcp/manifold/upstream"
)

// fakeCore is a Core of an SDK server and nothing else: no catalog (no lean
// calls), no shared stores, unless a test sets them.
type fakeCore struct {
	server  *mcp.Server
	log     *slog.Logger
	calls   session.Calls
	answers AnswerRelay
}

func newFakeCore() *fakeCore {
	return &fakeCore{
		server: mcp.NewServer(&mcp.Implementation{Name: "test", Version: "0"}, nil),
		log:    slog.New(slog.DiscardHandler),
	}
}

func (f *fakeCore) MCPServer() *mcp.Server              { return f.server }
func (f *fakeCore) Log() *slog.Logger                   { return f.log }
func (f *fakeCore) SDKLog() *slog.Logger                { return f.log }
func (f *fakeCore) Life() context.Context               { return context.Background() }
func (f *fakeCore) Observer() *observe.Observer         { return nil }
func (f *fakeCore) Calls() *session.Calls               { return &f.calls }
func (f *fakeCore) Sessions() SessionStore              { return nil }
func (f *fakeCore) Answers() AnswerRelay                { return f.answers }
func (f *fakeCore) ListenAnswers(func(string, []byte))  {}
func (f *fakeCore) KeepsEvents(func() (int, int, int))  {}
func (f *fakeCore) InFlight(int64)                      {}
func (f *fakeCore) Draining() bool                      { return false }
func (f *fakeCore) Health() http.Handler                { return http.NotFoundHandler() }
func (f *fakeCore) Metrics() http.Handler               { return nil }
func (f *fakeCore) ApprovalPages(string) http.Handler   { return http.NotFoundHandler() }
func (f *fakeCore) Lean() bool                          { return false }
func (f *fakeCore) PerSessionTool(string) bool          { return true }
func (f *fakeCore) HeaderBound(string) bool             { return false }
func (f *fakeCore) MetaTool(string) bool                { return false }
func (f *fakeCore) MayAsk(*mcp.ClientCapabilities) bool { return false }
func (f *fakeCore) ServerInfo() []byte                  { return nil }

func (f *fakeCore) SharedUp(string, policy.Identity) (*upstream.Upstream, bool) { return nil, false }

func (f *fakeCore) StartCall(_ context.Context, _ *mcp.ServerSession, _ string, _ map[string]json.RawMessage, done func(json.RawMessage, error)) {
	done(nil, context.Canceled)
}

func (f *fakeCore) CallAnswer(_ string, raw json.RawMessage) (json.RawMessage, error) {
	return raw, nil
}

func (f *fakeCore) LeanList(context.Context, *mcp.ServerSession, []byte, []byte, bool, *auth.TokenInfo) ([]byte, bool) {
	return nil, false
}
