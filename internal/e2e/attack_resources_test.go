package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Attacks on the resource policy (issue 9, "Resource policy can be
// bypassed"): every spelling of a denied URI that an upstream would read as
// the denied resource, for resources/read, resources/subscribe, and the
// resource embedded in a tool result or a prompt, over stdio (tools/call on
// the lean path) and HTTP (the SDK path). The denied content must appear in
// no response, whatever comes back instead.

// withheldNote is the text that replaces a withheld resource in content
// (naming.WithheldNote).
const withheldNote = "withheld by the proxy's resource policy"

// spellingsOf returns the spellings of the file URI of the absolute path p
// that the issue found reading a denied file: each names p to a lenient
// upstream (the fixture's -files mode). p's last two elements are
// dir/name.
func spellingsOf(p string) map[string]string {
	dir, name := filepath.Split(p)
	dir = strings.TrimSuffix(dir, "/")
	parent, sub := filepath.Split(dir)
	parent = strings.TrimSuffix(parent, "/")
	enc := "%" + fmt.Sprintf("%02x", sub[0]) + sub[1:]
	return map[string]string{
		"canonical":          "file://" + p,
		"FILE scheme":        "FILE://" + p,
		"File scheme":        "File://" + p,
		"dot segment":        "file://" + dir + "/./" + name,
		"dot dot segment":    "file://" + dir + "/x/../" + name,
		"encoded dot":        "file://" + dir + "/%2e/" + name,
		"encoded dot dot":    "file://" + dir + "/x/%2E%2E/" + name,
		"encoded letter":     "file://" + parent + "/" + enc + "/" + name,
		"encoded slash":      "file://" + dir + "%2f" + name,
		"empty segment":      "file://" + dir + "//" + name,
		"localhost":          "file://localhost" + p,
		"LOCALHOST":          "file://LOCALHOST" + p,
		"one slash":          "file:" + p,
		"trailing NUL":       "file://" + p + "\x00",
		"trailing slash":     "file://" + p + "/",
		"encoded NUL":        "file://" + p + "%00",
		"leading dot dots":   "file:///../.." + p,
		"everything at once": "FILE://LocalHost" + parent + "/./x/%2E%2E//" + enc + "/" + name,
	}
}

// secretFolder makes a scratch folder with a public file and two secret
// ones, each holding a marker that must never reach a client.
func secretFolder(t *testing.T) (dir string, secrets map[string]string) {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	secrets = map[string]string{
		filepath.Join(dir, "secret", "s.txt"):  "TOPSECRET-by-resources-deny",
		filepath.Join(dir, "guarded", "g.txt"): "TOPSECRET-by-policy-file",
	}
	for p, content := range secrets {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "public.txt"), []byte("public content"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, secrets
}

// jsonOf returns v as JSON.
func jsonOf(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%+v", v)
	}
	return string(b)
}

// leaks fails the test if the JSON of v (a result or an error) holds any of
// the markers.
func leaks(t *testing.T, what string, v any, markers ...string) {
	t.Helper()
	b := []byte(jsonOf(v))
	if e, ok := v.(error); ok {
		b = append(b, e.Error()...)
	}
	for _, m := range markers {
		if strings.Contains(string(b), m) {
			t.Errorf("%s: the denied content %q reached the client: %s", what, m, b)
		}
	}
}

func TestAttackResourceSpellings(t *testing.T) {
	t.Parallel()
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			t.Parallel()
			dir, secrets := secretFolder(t)
			var markers []string
			for _, m := range secrets {
				markers = append(markers, m)
			}
			// The policy file writes the proxy's prefix in upper case and the
			// path in a non-canonical spelling: rules are compiled to the
			// canonical form.
			policyFile := filepath.Join(t.TempDir(), "policy.toml")
			rule := fmt.Sprintf("[rules.guarded]\nuri = %s\ndeny = true\n", tomlStr("FS+file://localhost"+dir+"/./guarded/*"))
			if err := os.WriteFile(policyFile, []byte(rule), 0o644); err != nil {
				t.Fatal(err)
			}
			cfg := fmt.Sprintf("policy_files = [%s]\n", tomlStr(policyFile)) +
				fixture("fs", []string{"-files", dir, "-tools", "echo"},
					fmt.Sprintf("resources.deny = [%s]", tomlStr("file://"+dir+"/secret/*")))
			s := startSession(t, cfg, tr.http)
			ctx := testCtx(t)

			// Controls: what is not denied is read, embedded and linked.
			public := "fs+file://" + dir + "/public.txt"
			rr, err := s.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: public})
			if err != nil || len(rr.Contents) != 1 || rr.Contents[0].Text != "public content" {
				t.Fatalf("read %s = %+v, %v; want the public content", public, rr, err)
			}
			if rr.Contents[0].URI != public {
				t.Errorf("read %s: contents URI %q, want the URI read", public, rr.Contents[0].URI)
			}
			res := call(ctx, t, s.cs, "fs__embed", map[string]any{"uri": "file://" + dir + "/public.txt"})
			if got := jsonOf(res); !strings.Contains(got, "public content") || strings.Contains(got, withheldNote) {
				t.Fatalf("fs__embed(public) = %q, want the public content", got)
			}

			for path := range secrets {
				for name, orig := range spellingsOf(path) {
					for _, prefix := range []string{"fs+", "FS+", "Fs+"} {
						uri := prefix + orig
						what := fmt.Sprintf("%s %s (%q)", filepath.Base(filepath.Dir(path)), name, uri)
						rr, err := s.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
						if err == nil {
							t.Errorf("read %s succeeded (%d contents), want an error", what, len(rr.Contents))
						}
						leaks(t, "read "+what, rr, markers...)
						leaks(t, "read "+what, err, markers...)
						if err := s.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err == nil {
							t.Errorf("subscribe %s succeeded, want an error", what)
						}
					}
					// The upstream's own spelling, embedded by its tool and
					// prompt.
					what := fmt.Sprintf("%s %s (%q)", filepath.Base(filepath.Dir(path)), name, orig)
					res, err := s.cs.CallTool(ctx, &mcp.CallToolParams{Name: "fs__embed", Arguments: map[string]any{"uri": orig}})
					leaks(t, "fs__embed "+what, res, markers...)
					leaks(t, "fs__embed "+what, err, markers...)
					pr, err := s.cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "fs__embed", Arguments: map[string]string{"uri": orig}})
					leaks(t, "prompt fs__embed "+what, pr, markers...)
					leaks(t, "prompt fs__embed "+what, err, markers...)
				}
				// Embedded and linked: withheld, with a note in their place.
				res := call(ctx, t, s.cs, "fs__embed", map[string]any{"uri": "file://" + path})
				if got := texts(res.Content); len(got) != 3 || got[0] != "here it is" || !strings.Contains(got[1], withheldNote) || !strings.Contains(got[2], withheldNote) {
					t.Errorf("fs__embed(%s) content = %q, want the text and two notes of withheld resources", path, got)
				}
			}

			// The error for a URI that has no canonical form says why.
			_, err = s.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "fs+file://" + dir + "/secret%2fs.txt"})
			var rpcErr *jsonrpc.Error
			if !errors.As(err, &rpcErr) || rpcErr.Code != jsonrpc.CodeInvalidParams || !strings.Contains(rpcErr.Message, "cannot be canonicalised") {
				t.Errorf("read of an encoded slash: error %v, want invalid params saying it cannot be canonicalised", err)
			}
			// Subscribing to the public file works, and the upstream is sent
			// the canonical URI.
			if err := s.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "FS+file://localhost" + dir + "/./public.txt"}); err != nil {
				t.Fatalf("subscribe to the public file: %v", err)
			}
			waitFor(t, 10*time.Second, "the upstream subscription", func() bool {
				return strings.Contains(s.proc.stderr.String(), "msg=subscribe fixture=fs uri=file://"+dir+"/public.txt")
			})
			if n := strings.Count(s.proc.stderr.String(), "msg=subscribe fixture=fs"); n != 1 {
				t.Errorf("the upstream got %d subscriptions, want 1 (the public file's)", n)
			}
		})
	}
}

// TestAttackEverythingResources runs the attack against server-everything:
// its dynamic text resource 1 is denied by resources.deny, resource 2 by a
// policy file rule written with the proxy's prefix in another case. Neither
// may be read by any spelling, nor arrive embedded in get-resource-reference's
// result or resource-prompt's messages.
func TestAttackEverythingResources(t *testing.T) {
	t.Parallel()
	bin := nodeBin(t, "mcp-server-everything")
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			t.Parallel()
			policyFile := filepath.Join(t.TempDir(), "policy.toml")
			if err := os.WriteFile(policyFile, []byte("[rules.two]\nuri = \"EV+Demo://resource/dynamic/text/2\"\ndeny = true\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			cfg := fmt.Sprintf("policy_files = [%s]\n\n[servers.ev]\ncommand = %s\nargs = [\"stdio\"]\nresources.deny = [\"DEMO://resource/dynamic/text/1\"]\n",
				tomlStr(policyFile), tomlStr(bin))
			s := startSession(t, cfg, tr.http)
			ctx := testCtx(t)

			// Control: resource 3 is read, embedded and in the prompt.
			rr, err := s.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "ev+demo://resource/dynamic/text/3"})
			if err != nil || len(rr.Contents) != 1 || !strings.Contains(rr.Contents[0].Text, "Resource 3: This is a plaintext resource") {
				t.Fatalf("read resource 3 = %+v, %v; want its text", rr, err)
			}
			waitTool(ctx, t, s.cs, "ev__get-resource-reference")
			res := call(ctx, t, s.cs, "ev__get-resource-reference", map[string]any{"resourceType": "Text", "resourceId": 3})
			if !strings.Contains(jsonOf(res), "Resource 3: This is a plaintext resource") {
				t.Fatalf("get-resource-reference 3 = %s, want its text embedded", jsonOf(res))
			}

			for _, id := range []string{"1", "2"} {
				marker := "Resource " + id + ": This is a plaintext resource"
				for _, uri := range []string{
					"ev+demo://resource/dynamic/text/" + id,
					"EV+demo://resource/dynamic/text/" + id,
					"Ev+DEMO://resource/dynamic/text/" + id,
					"ev+Demo://resource/dynamic/text/" + id,
					"ev+demo://RESOURCE/dynamic/text/" + id,
					"ev+demo://resource/./dynamic/text/" + id,
					"ev+demo://resource/x/../dynamic/text/" + id,
					"ev+demo://resource/%2e/dynamic/text/" + id,
					"ev+demo://resource/x/%2E%2E/dynamic/text/" + id,
					"ev+demo://resource/dyn%61mic/text/" + id,
					"ev+demo://resource/dynamic/text/%3" + id,
					"ev+demo://resource//dynamic/text/" + id,
					"ev+demo://resource/dynamic/text/" + id + "/",
					"ev+demo://resource/dynamic/text/" + id + "\x00",
				} {
					rr, err := s.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
					if err == nil {
						t.Errorf("read %q succeeded (%d contents), want an error", uri, len(rr.Contents))
					}
					leaks(t, fmt.Sprintf("read %q", uri), rr, marker)
					leaks(t, fmt.Sprintf("read %q", uri), err, marker)
					if err := s.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err == nil {
						t.Errorf("subscribe %q succeeded, want an error", uri)
					}
				}
				n := 0
				fmt.Sscan(id, &n)
				res, err := s.cs.CallTool(ctx, &mcp.CallToolParams{Name: "ev__get-resource-reference", Arguments: map[string]any{"resourceType": "Text", "resourceId": n}})
				leaks(t, "get-resource-reference "+id, res, marker)
				leaks(t, "get-resource-reference "+id, err, marker)
				if err == nil && !strings.Contains(text(res), withheldNote) {
					t.Errorf("get-resource-reference %s = %q, want a note that the resource was withheld", id, text(res))
				}
				pr, err := s.cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "ev__resource-prompt", Arguments: map[string]string{"resourceType": "Text", "resourceId": id}})
				leaks(t, "resource-prompt "+id, pr, marker)
				leaks(t, "resource-prompt "+id, err, marker)
				if err != nil {
					t.Errorf("resource-prompt %s: %v, want the prompt with the resource withheld", id, err)
				}
			}
		})
	}
}

// TestSubscribeSpellingGetsUpdates: a subscription made with another
// spelling of a URI is recorded under the canonical URI, so the client gets
// resources/updated (with the canonical URI) when the upstream reports it.
func TestSubscribeSpellingGetsUpdates(t *testing.T) {
	t.Parallel()
	updated := make(chan string, 16)
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "0"}, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			select {
			case updated <- req.Params.URI:
			default:
			}
		},
	})
	hp := startHTTP(t, writeConfig(t, fixture("alpha", []string{"-extra", "touch"})))
	cs := connectHTTPClient(t, hp, client, protocolVersion)
	ctx := testCtx(t)
	waitTool(ctx, t, cs, "alpha__touch")
	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "ALPHA+Fixture://Alpha/./x/../readme.txt"}); err != nil {
		t.Fatalf("subscribe: %v", err)
	}
	_ = call(ctx, t, cs, "alpha__touch", nil)
	select {
	case got := <-updated:
		if want := "alpha+fixture://alpha/readme.txt"; got != want {
			t.Errorf("resources/updated for %q, want %q", got, want)
		}
	case <-time.After(awaitBound):
		t.Fatalf("no resources/updated within %s", awaitBound)
	}
}

// TestAttackFilesystemEmbedded runs server-filesystem on a scratch folder
// with its secret/ folder denied as resources: read_media_file returns a
// file as an embedded resource (in content and again in structuredContent),
// which is withheld for the secret file and delivered for the public one.
func TestAttackFilesystemEmbedded(t *testing.T) {
	t.Parallel()
	bin := nodeBin(t, "mcp-server-filesystem")
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			t.Parallel()
			dir, secrets := secretFolder(t)
			secret := filepath.Join(dir, "secret", "s.txt")
			cfg := fmt.Sprintf("[servers.files]\ncommand = %s\nargs = [%s]\nresources.deny = [%s]\n",
				tomlStr(bin), tomlStr(dir), tomlStr("FILE://localhost"+dir+"/./secret/*"))
			s := startSession(t, cfg, tr.http)
			ctx := testCtx(t)
			b64 := base64.StdEncoding.EncodeToString([]byte(secrets[secret]))

			res := call(ctx, t, s.cs, "files__read_media_file", map[string]any{"path": filepath.Join(dir, "public.txt")})
			if want := base64.StdEncoding.EncodeToString([]byte("public content")); !strings.Contains(jsonOf(res), want) {
				t.Fatalf("read_media_file(public.txt) = %s, want its content embedded", jsonOf(res))
			}
			for _, p := range []string{secret, dir + "/./secret/s.txt", dir + "/secret/../secret/s.txt", dir + "//secret/s.txt"} {
				res, err := s.cs.CallTool(ctx, &mcp.CallToolParams{Name: "files__read_media_file", Arguments: map[string]any{"path": p}})
				if err != nil {
					t.Fatalf("read_media_file(%s): %v", p, err)
				}
				leaks(t, "read_media_file "+p, res, b64, secrets[secret])
				if !strings.Contains(text(res), withheldNote) {
					t.Errorf("read_media_file(%s) = %s, want a note that the resource was withheld", p, jsonOf(res))
				}
			}
		})
	}
}

// TestListedSpellingReachesItsServer: the policy decides on the canonical
// URI, but a resource its server listed under another spelling (upper-case
// scheme or host, a trailing "/", an empty segment) is read from that server
// under the spelling it listed, since servers find listed resources by exact
// string. Before, such a resource was listed and then "not found".
func TestListedSpellingReachesItsServer(t *testing.T) {
	t.Parallel()
	body := fixture("alpha", []string{"-odd-uris"}) + fixture("plain", []string{"-odd-uris"}, `prefix = ""`)
	sp := startStdio(t, writeConfig(t, body))
	ctx := testCtx(t)
	listed := map[string]bool{}
	for r, err := range sp.cs.Resources(ctx, nil) {
		if err != nil {
			t.Fatalf("resources/list: %v", err)
		}
		listed[r.URI] = true
	}
	for _, tt := range []struct{ uri, raw string }{
		{"alpha+fixture://alpha/Dir", "Fixture://ALPHA/Dir/"},
		{"alpha+fixture://alpha/a/b", "fixture://alpha/a//b"},
		{"fixture://plain/Dir", "Fixture://PLAIN/Dir/"},
		{"fixture://plain/a/b", "fixture://plain/a//b"},
	} {
		if !listed[tt.uri] {
			t.Errorf("resources/list lacks %s (listed: %v)", tt.uri, listed)
			continue
		}
		for _, ask := range []string{tt.uri, strings.ToUpper(tt.uri[:1]) + tt.uri[1:], tt.uri + "/"} {
			rr, err := sp.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: ask})
			if err != nil {
				t.Errorf("read %s: %v", ask, err)
				continue
			}
			if len(rr.Contents) != 1 || rr.Contents[0].Text != "odd "+tt.raw {
				t.Errorf("read %s = %+v, want the text %q", ask, rr.Contents, "odd "+tt.raw)
			}
		}
	}
}
