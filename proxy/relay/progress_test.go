package relay

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestMapToken: the progress token of a call's _meta is replaced by the
// route's id, whatever the _meta looks like: read on its bytes when plain,
// decoded otherwise (escapes, a key named twice), and the server sees one
// token, the route's id, never one the client chose, whichever of
// duplicate keys its decoder keeps. The client's token is kept exactly.
func TestMapToken(t *testing.T) {
	ctx := context.WithValue(t.Context(), ProgressSinkKey{}, ProgressSink(func(*mcp.ProgressNotificationParams) {}))
	for _, tt := range []struct {
		name, meta string
		token      string // the client's token as JSON; "" for none
		err        bool
	}{
		{"string", `{"progressToken":"abc"}`, `"abc"`, false},
		{"number", ` { "a" : 1, "progressToken" : 9007199254740993 , "b":[2]} `, `9007199254740993`, false},
		{"negative float", `{"progressToken":-1.5e3}`, `-1.5e3`, false},
		{"escaped string", `{"progressToken":"a\u0041"}`, `"aA"`, false},
		{"unicode string", `{"progressToken":"é✓"}`, `"é✓"`, false},
		{"object", `{"progressToken":{"k":1}}`, `{"k":1}`, false},
		{"none", `{"a":{"progressToken":1},"b":"progressToken"}`, "", false},
		{"empty", `{}`, "", false},
		{"escaped key", `{"progress\u0054oken":"e"}`, `"e"`, false},
		{"twice", `{"progressToken":"mine","progressToken":"mf-progress-VICTIM"}`, `"mf-progress-VICTIM"`, false},
		{"twice, spaced", `{"progressToken":"mine", "progressToken" :"x"}`, `"x"`, false},
		{"not an object", `["progressToken"]`, "", true},
		{"invalid", `{"progressToken":}`, "", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var p progressRoutes
			out, id, release, err := p.mapToken(ctx, nil, json.RawMessage(tt.meta), nil, nil)
			defer release()
			if tt.err {
				if err == nil {
					t.Fatalf("mapToken(%s) = %s, want an error", tt.meta, out)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var in, got map[string]any
			if err := json.Unmarshal([]byte(tt.meta), &in); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatalf("out %s: %v", out, err)
			}
			if tt.token == "" {
				if id != "" || string(out) != tt.meta {
					t.Errorf("mapToken(%s) = %s, %q: want it unchanged, no route", tt.meta, out, id)
				}
				return
			}
			if !strings.HasPrefix(id, "mf-progress-") || got["progressToken"] != id || strings.Count(string(out), `"progressToken"`) != 1 {
				t.Errorf("mapToken(%s) = %s, route %q: want the route's id as the one token (a decoder that keeps the first of duplicate keys must not see the client's)", tt.meta, out, id)
			}
			delete(in, "progressToken")
			delete(got, "progressToken")
			if diff := cmp.Diff(in, got); diff != "" {
				t.Errorf("the other members changed (-in +out):\n%s", diff)
			}
			rt := p.routes[id]
			if b, _ := json.Marshal(rt.token); string(b) != tt.token {
				t.Errorf("the route keeps the token %s, want %s", b, tt.token)
			}
		})
	}
}

// BenchmarkMapToken maps the progress token of a call's _meta, as a client
// that asks for progress on every call (Claude Code) makes every call do.
func BenchmarkMapToken(b *testing.B) {
	ctx := context.WithValue(b.Context(), ProgressSinkKey{}, ProgressSink(func(*mcp.ProgressNotificationParams) {}))
	meta := json.RawMessage(`{"progressToken":12,"claudecode/toolUseId":"toolu_01ABCDEFGHIJKLMNOPQRSTUV"}`)
	var p progressRoutes
	b.ReportAllocs()
	for b.Loop() {
		_, _, release, err := p.mapToken(ctx, nil, meta, nil, nil)
		if err != nil {
			b.Fatal(err)
		}
		release()
	}
}
