package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// End-to-end tests of identities driving policy (issue 15, part 2): who-rules
// in proxy.toml and a policy file, two identities with real tokens of a test
// issuer (auth_test.go) seeing different lists, every hidden item refused by
// name, explain --as agreeing with each list, rate limits per identity, the
// search surface, cacheScope for 2026-07-28 clients, a reload, and hostile
// tokens.

// whoPolicy is the policy file of the who tests: rules per user, limits per
// identity and shared, and a who-rule that tries to widen proxy.toml's.
const whoPolicy = `
[rules.bob_no_args]
match = "local__args"
deny = true
who = ["user:bob@example.com"]

[rules.echo_rate]
match = "local__echo"
rate = "3/minute"

[rules.whoami_shared]
match = "local__whoami"
rate = "2/minute"
per = "all"

[rules.ops_budget]
match = "ops__echo"
budget = { limit = 2, window = "1h", from = "/structuredContent/cost", missing = 1 }

# A who-rule of a policy file cannot show what proxy.toml's rules hide.
[rules.try_widen]
match = "ops__whoami"
allow = true
who = ["user:bob@example.com", "group:sales"]
`

// whoConfig is the proxy.toml of the who tests: ops's tools, prompts and
// .txt resources hidden from everyone but group eng (proxy.toml's own
// rules), a search-mode client and a search-mode API key.
func whoConfig(issuer string) string {
	return `
policy_files = ["policy.toml"]

[audit]
file = "audit.jsonl"

[auth]
issuer = ` + tomlStr(issuer) + `
api_keys_file = "keys.toml"

[catalog.clients]
searcher = "search"

[catalog.identities]
"key:ci-bot" = "search"
` + fixture("local", []string{"-tools", "echo,whoami,args"}) + fixture("ops", []string{"-tools", "echo,whoami"}) + `
[rules.no_ops]
match = "ops__*"
deny = true

[rules.eng_ops]
match = "ops__*"
allow = true
who = ["group:eng"]

[rules.no_ops_files]
uri = "ops+*.txt"
deny = true

[rules.eng_ops_files]
uri = "ops+*.txt"
allow = true
who = ["group:eng"]
`
}

// seen is what one session lists.
type seen struct {
	Tools, Prompts, Resources, Templates []string
}

func lists(ctx context.Context, t *testing.T, cs *mcp.ClientSession) seen {
	t.Helper()
	var s seen
	s.Tools = toolNames(listTools(ctx, t, cs))
	for p, err := range cs.Prompts(ctx, nil) {
		if err != nil {
			t.Fatalf("prompts/list: %v", err)
		}
		s.Prompts = append(s.Prompts, p.Name)
	}
	for r, err := range cs.Resources(ctx, nil) {
		if err != nil {
			t.Fatalf("resources/list: %v", err)
		}
		s.Resources = append(s.Resources, r.URI)
	}
	for r, err := range cs.ResourceTemplates(ctx, nil) {
		if err != nil {
			t.Fatalf("resources/templates/list: %v", err)
		}
		s.Templates = append(s.Templates, r.URITemplate)
	}
	slices.Sort(s.Prompts)
	slices.Sort(s.Resources)
	slices.Sort(s.Templates)
	return s
}

// whoToken is a token of the issuer for sub in groups.
func whoToken(is *testIssuer, aud, sub string, groups ...string) string {
	c := is.good(sub, aud)
	c.Grps = groups
	return is.sign("k1", c)
}

// explainAs runs manifold explain --as for names and returns, per name,
// whether the decision is that it is exposed.
func explainAs(t *testing.T, cfg string, as []string, names []string) map[string]bool {
	t.Helper()
	args := append([]string{"explain", "--config", cfg}, as...)
	out := runIn(t, filepath.Dir(cfg), append(args, names...)...)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != len(names) {
		t.Fatalf("explain %q printed %d lines for %d names:\n%s", as, len(lines), len(names), out)
	}
	got := map[string]bool{}
	for i, l := range lines {
		// "as user:…: tool NAME (server …): exposed…" or "…: hidden: …"
		if !strings.Contains(l, " "+names[i]+" ") {
			t.Fatalf("explain line %d %q is not about %s", i+1, l, names[i])
		}
		_, verdict, ok := strings.Cut(l, "): ")
		if !ok {
			t.Fatalf("explain line %q has no verdict", l)
		}
		got[names[i]] = strings.HasPrefix(verdict, "exposed")
	}
	return got
}

// searchNames returns the names a search_tools call found.
func searchNames(t *testing.T, res *mcp.CallToolResult) []string {
	t.Helper()
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	var sc struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(b, &sc); err != nil {
		t.Fatalf("search_tools structuredContent %s: %v", b, err)
	}
	var out []string
	for _, h := range sc.Tools {
		out = append(out, h.Name)
	}
	slices.Sort(out)
	return out
}

// TestWhoIdentities: alice (group eng) and bob (group sales) over HTTP with
// real tokens, and an API key, against who-rules in proxy.toml and a policy
// file.
func TestWhoIdentities(t *testing.T) {
	t.Parallel()
	is := newTestIssuer(t)
	const ciKey = "e2e-api-key-ci-bot-0123456789abcdef"
	cfg := writeConfig(t, whoConfig(is.url))
	dir := filepath.Dir(cfg)
	policyFile := filepath.Join(dir, "policy.toml")
	if err := os.WriteFile(policyFile, []byte(whoPolicy), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "keys.toml"), []byte(keyLine("ci-bot", ciKey, "ci")), 0o600); err != nil {
		t.Fatal(err)
	}
	hp := startHTTP(t, cfg)
	aud := hp.endpoint()
	ctx := testCtx(t)
	aliceTok := whoToken(is, aud, "alice@example.com", "eng")
	bobTok := whoToken(is, aud, "bob@example.com", "sales")
	alice := authedSession(t, hp, "alice-client", aliceTok)
	bob := authedSession(t, hp, "bob-client", bobTok)

	wantAlice := seen{
		Tools:     []string{"local__args", "local__echo", "local__whoami", "ops__echo", "ops__whoami"},
		Prompts:   []string{"local__greet", "ops__greet"},
		Resources: []string{"local+file:///shared/same.txt", "local+fixture://local/readme.txt", "ops+file:///shared/same.txt", "ops+fixture://ops/readme.txt"},
		Templates: []string{"local+fixture://local/{file}", "ops+fixture://ops/{file}"},
	}
	wantBob := seen{
		Tools:     []string{"local__echo", "local__whoami"},
		Prompts:   []string{"local__greet"},
		Resources: []string{"local+file:///shared/same.txt", "local+fixture://local/readme.txt"},
		Templates: []string{"local+fixture://local/{file}", "ops+fixture://ops/{file}"}, // no rule narrows templates
	}
	gotAlice, gotBob := lists(ctx, t, alice), lists(ctx, t, bob)
	if diff := cmp.Diff(wantAlice, gotAlice); diff != "" {
		t.Errorf("alice's lists (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantBob, gotBob); diff != "" {
		t.Errorf("bob's lists (-want +got):\n%s", diff)
	}

	t.Run("hidden is refused by name", func(t *testing.T) {
		for _, name := range gotAlice.Tools {
			if slices.Contains(gotBob.Tools, name) {
				continue
			}
			_, err := bob.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{"message": "x"}})
			if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("unknown tool %q", name)) {
				t.Errorf("bob calls %s: %v; want unknown tool, as for a name that does not exist", name, err)
			}
		}
		for _, name := range gotAlice.Prompts {
			if slices.Contains(gotBob.Prompts, name) {
				continue
			}
			if _, err := bob.GetPrompt(ctx, &mcp.GetPromptParams{Name: name, Arguments: map[string]string{"who": "x"}}); err == nil || !strings.Contains(err.Error(), "unknown prompt") {
				t.Errorf("bob gets %s: %v; want unknown prompt", name, err)
			}
		}
		for _, uri := range gotAlice.Resources {
			if slices.Contains(gotBob.Resources, uri) {
				continue
			}
			if _, err := bob.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri}); err == nil {
				t.Errorf("bob reads %s: no error; want resource not found", uri)
			}
			if _, err := alice.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri}); err != nil {
				t.Errorf("alice reads %s: %v", uri, err)
			}
		}
		// What each sees, each can use.
		if got := text(call(ctx, t, alice, "ops__echo", map[string]any{"message": "hi"})); got != "ops: hi" {
			t.Errorf("alice calls ops__echo: %q", got)
		}
	})

	t.Run("explain --as agrees with each list", func(t *testing.T) {
		all := append(slices.Clone(gotAlice.Tools), gotAlice.Prompts...)
		for _, c := range []struct {
			who  string
			as   []string
			list seen
		}{
			{"alice", []string{"--as", "user:alice@example.com", "--group", "eng"}, gotAlice},
			{"bob", []string{"--as", "user:bob@example.com", "--group", "sales"}, gotBob},
		} {
			got := explainAs(t, cfg, c.as, all)
			for _, name := range all {
				listed := slices.Contains(c.list.Tools, name) || slices.Contains(c.list.Prompts, name)
				if got[name] != listed {
					t.Errorf("%s: explain --as says exposed=%v for %s; the list says %v", c.who, got[name], name, listed)
				}
			}
		}
		// An API key's groups come from the keys file.
		if out := runIn(t, dir, "explain", "--config", cfg, "--as", "key:ci-bot", "ops__echo"); !strings.Contains(out, `as key:"ci-bot" group:ci: tool ops__echo`) || !strings.Contains(out, `hidden: rule "no_ops" (`) {
			t.Errorf("explain --as key:ci-bot ops__echo = %q; want hidden by no_ops", out)
		}
	})

	t.Run("search surface", func(t *testing.T) {
		bobS := authedSession(t, hp, "searcher", bobTok)
		aliceS := authedSession(t, hp, "searcher", aliceTok)
		if got := listedNames(ctx, t, bobS); !slices.Equal(got, searchList) {
			t.Fatalf("searcher lists %v; want the search surface", got)
		}
		// search_tools names only the servers the caller can find.
		searchDesc := func(cs *mcp.ClientSession) string {
			for _, tl := range listTools(ctx, t, cs) {
				if tl.Name == "search_tools" {
					return tl.Description
				}
			}
			return ""
		}
		if d := searchDesc(bobS); strings.Contains(d, "ops") || !strings.Contains(d, "local") {
			t.Errorf("bob's search_tools says %q; want local named and ops not", d)
		}
		if d := searchDesc(aliceS); !strings.Contains(d, "ops") {
			t.Errorf("alice's search_tools says %q; want ops named", d)
		}
		find := func(cs *mcp.ClientSession) []string {
			return searchNames(t, call(ctx, t, cs, "search_tools", map[string]any{"query": "echo message server name", "limit": 20}))
		}
		if got := find(bobS); slices.ContainsFunc(got, func(n string) bool { return !slices.Contains(gotBob.Tools, n) }) || len(got) == 0 {
			t.Errorf("bob's search found %v; want only tools of his list %v", got, gotBob.Tools)
		}
		if got := find(aliceS); !slices.Contains(got, "ops__echo") {
			t.Errorf("alice's search found %v; want ops__echo among them", got)
		}
		for _, name := range gotAlice.Tools {
			if slices.Contains(gotBob.Tools, name) {
				continue
			}
			res := call(ctx, t, bobS, "describe_tools", map[string]any{"names": []string{name}})
			if !strings.Contains(text(res), fmt.Sprintf("unknown tool %q", name)) {
				t.Errorf("bob describes %s: %q; want unknown tool", name, text(res))
			}
			for _, via := range []string{"call_tool_read", "call_tool_write"} {
				res := call(ctx, t, bobS, via, map[string]any{"name": name, "arguments": map[string]any{"message": "x"}})
				if !res.IsError || !strings.Contains(text(res), fmt.Sprintf("unknown tool %q", name)) {
					t.Errorf("bob calls %s through %s: %q; want unknown tool", name, via, text(res))
				}
			}
		}
		// [catalog.identities]: the API key gets search whatever its client.
		ci := authedSession(t, hp, "ci-client", ciKey)
		if got := listedNames(ctx, t, ci); !slices.Equal(got, searchList) {
			t.Errorf("key:ci-bot lists %v; want the search surface ([catalog.identities])", got)
		}
	})

	t.Run("cacheScope for 2026-07-28 clients", func(t *testing.T) {
		m, err := tryAuthedSession(t, hp, "alice-modern", aliceTok, modernVersion)
		if err != nil {
			t.Fatal(err)
		}
		tl, err := m.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if tl.CacheScope != "private" {
			t.Errorf("tools/list narrowed per identity: cacheScope %q; want private", tl.CacheScope)
		}
		rl, err := m.ListResources(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if rl.CacheScope != "private" {
			t.Errorf("resources/list narrowed per identity: cacheScope %q; want private", rl.CacheScope)
		}
		tm, err := m.ListResourceTemplates(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if tm.CacheScope != "public" {
			t.Errorf("resources/templates/list that no rule narrows: cacheScope %q; want public", tm.CacheScope)
		}
		// The same bytes every time, per identity.
		again, err := m.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		a, _ := json.Marshal(tl.Tools)
		b, _ := json.Marshal(again.Tools)
		if string(a) != string(b) {
			t.Errorf("two tools/list of one identity differ:\n%s\n%s", a, b)
		}
	})

	t.Run("rate limits per identity", func(t *testing.T) {
		// echo_rate: 3/minute for each identity.
		for i := range 3 {
			if res := call(ctx, t, alice, "local__echo", map[string]any{"message": "r"}); res.IsError {
				t.Fatalf("alice's call %d of local__echo: %q", i+1, text(res))
			}
		}
		if res := call(ctx, t, alice, "local__echo", map[string]any{"message": "r"}); !res.IsError || !strings.Contains(text(res), "rate limit") {
			t.Errorf("alice's 4th call: %q; want the rate limit", text(res))
		}
		if res := call(ctx, t, bob, "local__echo", map[string]any{"message": "r"}); res.IsError {
			t.Errorf("bob's first call after alice spent hers: %q; want it to pass (his own count)", text(res))
		}
		// whoami_shared: per = "all", one count of 2/minute for everyone.
		for range 2 {
			if res := call(ctx, t, alice, "local__whoami", nil); res.IsError {
				t.Fatalf("alice's whoami: %q", text(res))
			}
		}
		if res := call(ctx, t, bob, "local__whoami", nil); !res.IsError || !strings.Contains(text(res), "rate limit") {
			t.Errorf("bob's whoami after alice spent the shared count: %q; want the rate limit", text(res))
		}
	})

	t.Run("spend caps per identity", func(t *testing.T) {
		// ops_budget: 2 per hour for each identity (each result counts 1);
		// alice spent 1 above.
		if res := call(ctx, t, alice, "ops__echo", map[string]any{"message": "b"}); res.IsError {
			t.Fatalf("alice's 2nd ops__echo: %q", text(res))
		}
		if res := call(ctx, t, alice, "ops__echo", map[string]any{"message": "b"}); !res.IsError || !strings.Contains(text(res), "spend cap") {
			t.Errorf("alice's 3rd ops__echo: %q; want the spend cap", text(res))
		}
		carol := authedSession(t, hp, "carol-client", whoToken(is, aud, "carol@example.com", "eng"))
		if res := call(ctx, t, carol, "ops__echo", map[string]any{"message": "b"}); res.IsError {
			t.Errorf("carol's first ops__echo after alice spent hers: %q; want it to pass (her own budget)", text(res))
		}
	})

	t.Run("audit carries identity and client", func(t *testing.T) {
		lines := readAudit(t, filepath.Join(dir, "audit.jsonl"))
		var hidden, limited, spent bool
		for _, l := range lines {
			switch {
			case l["exposed"] == "ops__echo" && l["identity"] == "bob@example.com" && l["client"] == "bob-client" && l["decision"] == "denied":
				hidden = true
			case l["exposed"] == "local__echo" && l["identity"] == "alice@example.com" && l["client"] == "alice-client" && l["outcome"] == "rate limited":
				limited = true
			case l["exposed"] == "ops__echo" && l["identity"] == "alice@example.com" && l["client"] == "alice-client" && l["outcome"] == "budget spent":
				spent = true
			}
		}
		if !hidden || !limited || !spent {
			t.Errorf("audit: bob's refused ops__echo found %v, alice's rate-limited call %v, alice's spend-capped call %v; want each with identity and client\n%v", hidden, limited, spent, lines)
		}
	})

	t.Run("hostile tokens widen nothing", func(t *testing.T) {
		many := make([]string, 0, 301)
		for i := range 300 {
			many = append(many, fmt.Sprintf("g%d", i))
		}
		many = append(many, "eng") // past the 256 values taken from a token
		claims := func(sub string, groups any) map[string]any {
			c := is.good(sub, aud)
			return map[string]any{"iss": c.Iss, "sub": c.Sub, "aud": c.Aud, "exp": c.Exp, "iat": c.Iat, "scope": c.Scope, "groups": groups}
		}
		for _, tc := range []struct {
			name   string
			claims map[string]any
		}{
			{"groups huge", claims("mallory", many)},
			{"groups not a list", claims("mallory", map[string]any{"eng": true})},
			{"groups of numbers", claims("mallory", []any{1, "eng", 2})},
			{"groups glob", claims("mallory", []string{"*", "e*", "eng*"})},
			{"groups control characters", claims("mallory", []string{"eng\x00", "eng\n", "\x00eng"})},
			{"subject like a group", claims("group:eng", []string{"group:eng"})},
			{"subject with NUL", claims("bob@example.com\x00group:eng", []string{"sales"})},
		} {
			t.Run(tc.name, func(t *testing.T) {
				cs, err := tryAuthedSession(t, hp, "mallory", is.sign("k1", tc.claims), protocolVersion)
				if err != nil {
					return // refused outright: nothing widened
				}
				got := lists(ctx, t, cs)
				for _, n := range got.Tools {
					if strings.HasPrefix(n, "ops__") {
						t.Errorf("tools/list shows %s; want ops hidden (only group eng sees it)", n)
					}
				}
				for _, n := range append(got.Prompts, got.Resources...) {
					if strings.HasPrefix(n, "ops") {
						t.Errorf("list shows %s; want ops hidden", n)
					}
				}
				if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ops__echo", Arguments: map[string]any{"message": "x"}}); err == nil {
					t.Error("ops__echo callable")
				}
			})
		}
	})

	t.Run("a reload of a who-rule applies without restart", func(t *testing.T) {
		changed := strings.Replace(whoPolicy, `who = ["user:bob@example.com"]`, `who = ["user:alice@example.com"]`, 1)
		if err := os.WriteFile(policyFile, []byte(changed), 0o644); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 20*time.Second, "bob sees local__args after the reload", func() bool {
			return slices.Contains(lists(ctx, t, bob).Tools, "local__args")
		})
		if got := lists(ctx, t, alice).Tools; slices.Contains(got, "local__args") {
			t.Errorf("alice still lists local__args after the reload: %v", got)
		}
		if _, err := alice.CallTool(ctx, &mcp.CallToolParams{Name: "local__args"}); err == nil || !strings.Contains(err.Error(), "unknown tool") {
			t.Errorf("alice calls local__args after the reload: %v; want unknown tool", err)
		}
		if res := call(ctx, t, bob, "local__args", map[string]any{"a": 1}); res.IsError {
			t.Errorf("bob calls local__args after the reload: %q", text(res))
		}
	})
}
