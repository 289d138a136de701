//lint:file-ignore SA1019 sampling, roots and logging are deprecated as of protocol 2026-07-28, but Manifold serves clients on 2024-11-05 to 2025-11-25, for whom they are part of the protocol.

package e2e

import (
	"net/http"
	"strings"
	"testing"

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
	cfg := fixture("alpha", []string{"-tools", "echo", "-extra", "sample,elicit,roots"})
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
