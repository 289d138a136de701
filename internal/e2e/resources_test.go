package e2e

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestResourcesRoutedAndRewritten(t *testing.T) {
	t.Parallel()
	sp := startStdio(t, writeConfig(t, twoFixtures()))
	ctx := testCtx(t)

	t.Run("listed with rewritten URIs", func(t *testing.T) {
		var got []string
		for r, err := range sp.cs.Resources(ctx, nil) {
			if err != nil {
				t.Fatalf("resources/list: %v", err)
			}
			got = append(got, r.URI)
		}
		slices.Sort(got)
		want := []string{"alpha+file:///shared/same.txt", "alpha+fixture://alpha/readme.txt", "beta+file:///shared/same.txt", "beta+fixture://beta/readme.txt"}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("resources (-want +got):\n%s", diff)
		}
	})

	t.Run("read from the right server", func(t *testing.T) {
		tests := []struct {
			uri  string
			want string
		}{
			{uri: "alpha+fixture://alpha/readme.txt", want: "readme of alpha"},
			{uri: "beta+fixture://beta/readme.txt", want: "readme of beta"},
			{uri: "alpha+file:///shared/same.txt", want: "same from alpha"},
			{uri: "beta+file:///shared/same.txt", want: "same from beta"},
			// Not in any list: answered by the servers' template.
			{uri: "alpha+fixture://alpha/other.txt", want: "template alpha other.txt"},
			{uri: "beta+fixture://beta/other.txt", want: "template beta other.txt"},
		}
		for _, tt := range tests {
			rr, err := sp.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: tt.uri})
			if err != nil {
				t.Errorf("read %s: %v", tt.uri, err)
				continue
			}
			want := []*mcp.ResourceContents{{URI: tt.uri, MIMEType: "text/plain", Text: tt.want}}
			if diff := cmp.Diff(want, rr.Contents); diff != "" {
				t.Errorf("read %s (-want +got):\n%s", tt.uri, diff)
			}
		}
	})

	t.Run("unknown URI is an error", func(t *testing.T) {
		for _, uri := range []string{"file:///shared/same.txt", "gamma+file:///x"} {
			if rr, err := sp.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri}); err == nil {
				t.Errorf("read %s = %+v, want an error (no server owns it)", uri, rr.Contents)
			}
		}
	})

	t.Run("resource links and embedded resources", func(t *testing.T) {
		for _, server := range []string{"alpha", "beta"} {
			res := call(ctx, t, sp.cs, server+"__link", nil)
			if len(res.Content) != 2 {
				t.Fatalf("%s__link content = %v, want a link and an embedded resource", server, texts(res.Content))
			}
			link, ok := res.Content[0].(*mcp.ResourceLink)
			if !ok {
				t.Fatalf("%s__link content[0] is %T, want *mcp.ResourceLink", server, res.Content[0])
			}
			if want := server + "+fixture://" + server + "/linked.txt"; link.URI != want {
				t.Errorf("%s__link resource_link URI = %q, want %q", server, link.URI, want)
			}
			emb, ok := res.Content[1].(*mcp.EmbeddedResource)
			if !ok || emb.Resource == nil {
				t.Fatalf("%s__link content[1] is %T, want *mcp.EmbeddedResource", server, res.Content[1])
			}
			if want := server + "+fixture://" + server + "/embedded.txt"; emb.Resource.URI != want {
				t.Errorf("%s__link embedded URI = %q, want %q", server, emb.Resource.URI, want)
			}
			// The link is in no list: the proxy routes it by its prefix.
			rr, err := sp.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: link.URI})
			if err != nil {
				t.Fatalf("read %s: %v", link.URI, err)
			}
			if len(rr.Contents) != 1 || rr.Contents[0].Text != "template "+server+" linked.txt" {
				t.Errorf("read %s = %+v, want the text of %s's template", link.URI, rr.Contents, server)
			}
		}
	})

	t.Run("templates", func(t *testing.T) {
		var got []string
		for rt, err := range sp.cs.ResourceTemplates(ctx, nil) {
			if err != nil {
				t.Fatalf("resources/templates/list: %v", err)
			}
			got = append(got, rt.URITemplate)
		}
		slices.Sort(got)
		want := []string{"alpha+fixture://alpha/{file}", "beta+fixture://beta/{file}"}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("templates (-want +got):\n%s", diff)
		}
	})

	t.Run("prompt", func(t *testing.T) {
		for _, server := range []string{"alpha", "beta"} {
			gp, err := sp.cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: server + "__greet", Arguments: map[string]string{"who": "Ann"}})
			if err != nil {
				t.Fatalf("get %s__greet: %v", server, err)
			}
			if len(gp.Messages) != 2 {
				t.Fatalf("%s__greet: %d messages, want 2", server, len(gp.Messages))
			}
			if tc, ok := gp.Messages[0].Content.(*mcp.TextContent); !ok || tc.Text != "Hello Ann from "+server {
				t.Errorf("%s__greet message 0 = %#v, want text %q", server, gp.Messages[0].Content, "Hello Ann from "+server)
			}
			emb, ok := gp.Messages[1].Content.(*mcp.EmbeddedResource)
			if !ok || emb.Resource == nil {
				t.Fatalf("%s__greet message 1 is %T, want an embedded resource", server, gp.Messages[1].Content)
			}
			want := &mcp.ResourceContents{URI: server + "+fixture://" + server + "/readme.txt", MIMEType: "text/plain", Text: "readme of " + server}
			if diff := cmp.Diff(want, emb.Resource); diff != "" {
				t.Errorf("%s__greet embedded resource (-want +got):\n%s", server, diff)
			}
		}
	})

	t.Run("completion", func(t *testing.T) {
		tests := []struct {
			name string
			ref  *mcp.CompleteReference
			arg  mcp.CompleteParamsArgument
			want []string
		}{
			{
				name: "prompt argument",
				ref:  &mcp.CompleteReference{Type: "ref/prompt", Name: "alpha__greet"},
				arg:  mcp.CompleteParamsArgument{Name: "who", Value: "al"},
				want: []string{"alice", "albert"},
			},
			{
				name: "prompt argument, other server",
				ref:  &mcp.CompleteReference{Type: "ref/prompt", Name: "beta__greet"},
				arg:  mcp.CompleteParamsArgument{Name: "who", Value: "alb"},
				want: []string{"albert"},
			},
			{
				name: "template argument",
				ref:  &mcp.CompleteReference{Type: "ref/resource", URI: "beta+fixture://beta/{file}"},
				arg:  mcp.CompleteParamsArgument{Name: "file", Value: "r"},
				want: []string{"readme.txt"},
			},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				cr, err := sp.cs.Complete(ctx, &mcp.CompleteParams{Ref: tt.ref, Argument: tt.arg})
				if err != nil {
					t.Fatalf("complete: %v", err)
				}
				if diff := cmp.Diff(tt.want, cr.Completion.Values); diff != "" {
					t.Errorf("completion values (-want +got):\n%s", diff)
				}
			})
		}
	})
}

// TestReadCarriesACacheScope: a read result relayed from an upstream that set
// no cacheScope (server-everything, whose SDK predates the field) says
// "public" to a 2026-07-28 client (the protocol's default, required on the
// wire), never the empty string; a 2025-11-25 client gets no cacheScope,
// which its version does not have.
func TestReadCarriesACacheScope(t *testing.T) {
	t.Parallel()
	bin := nodeBin(t, "mcp-server-everything")
	r := startRaw(t, writeConfig(t, fmt.Sprintf("[servers.everything]\ncommand = %s\nargs = [\"stdio\"]\n", tomlStr(bin))))
	const uri = `"uri":"everything+demo://resource/static/document/architecture.md"`
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"raw","version":"0"}}`
	r.send(t, `{"jsonrpc":"2.0","id":6,"method":"resources/read","params":{`+uri+`,`+meta+`}}`)
	m := r.await(t, "6")
	var res struct {
		CacheScope *string `json:"cacheScope"`
	}
	if err := json.Unmarshal(m.Result, &res); err != nil || res.CacheScope == nil || *res.CacheScope != "public" {
		t.Errorf("2026-07-28 resources/read result %s (error %s): want cacheScope \"public\"", m.Result, m.Error)
	}
	// A session that began with a 2026-07-28 request takes no initialize:
	// the 2025-11-25 client is another manifold's.
	r = startRaw(t, writeConfig(t, fmt.Sprintf("[servers.everything]\ncommand = %s\nargs = [\"stdio\"]\n", tomlStr(bin))))
	rawInit(t, r)
	r.send(t, `{"jsonrpc":"2.0","id":7,"method":"resources/read","params":{`+uri+`}}`)
	m = r.await(t, "7")
	res.CacheScope = nil
	if err := json.Unmarshal(m.Result, &res); err != nil || res.CacheScope != nil {
		t.Errorf("2025-11-25 resources/read result %s (error %s): want no cacheScope", m.Result, m.Error)
	}
}
