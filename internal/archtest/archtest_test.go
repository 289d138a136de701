package archtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const module = "github.com/manifold-mcp/manifold"

const (
	goSDK    = "github.com/modelcontextprotocol/go-sdk"
	toml     = "github.com/BurntSushi/toml"
	goPlugin = "github.com/hashicorp/go-plugin"
	goJOSE   = "github.com/go-jose/go-jose"
	goRedis  = "github.com/redis/go-redis"
)

// rule says what the packages matching one pattern may not depend on, directly
// or transitively. Test imports are not checked.
type rule struct {
	// dir is the rule's directory under the module root; the rule covers dir/...
	// "." covers the whole module.
	dir string
	// stdlibOnly allows only the standard library and packages under dir.
	stdlibOnly bool
	// allow lists import-path prefixes a stdlibOnly rule permits besides
	// the standard library.
	allow []string
	// forbidden lists import-path prefixes (whole path elements) that no package
	// under dir may reach. A prefix does not apply to packages inside it, so the
	// rule "nothing imports cmd" leaves cmd's own packages free to import each other.
	forbidden []string
	// forbiddenPkgs lists packages (whole import paths, not prefixes) that no
	// package under dir may reach, even one inside them: a room under proxy/
	// may import its sibling rooms but not package proxy itself.
	forbiddenPkgs []string
	// within, if not nil, lists the only packages of the module (paths below
	// the module, whole path elements) that packages under dir may reach,
	// besides their own: a room of the house (ARCHITECTURE §1 "The house")
	// reaches the rooms below it, never the root or a face.
	within []string
}

// lower is what a room of proxy may reach of the module (ARCHITECTURE §1:
// rooms → era, wire, naming, pin, search, policy), with the leaf packages
// of internal/ that every layer shares.
var lower = []string{
	"policy", "proxy/era", "proxy/internal/wire", "proxy/naming", "proxy/pin", "proxy/search",
	"internal/redact", "internal/jsonscan",
}

// withUpstream is lower with one connection to a server (upstream, and
// upstream/supervise that keeps it alive) and the leaves upstream brings:
// what a room that reads backends may reach.
var withUpstream = append([]string{
	"upstream", "internal/reaper", "internal/pagetrim", "internal/spawn", "internal/tokenstore",
}, lower...)

// rules is ARCHITECTURE §1 as data.
var rules = []rule{
	{dir: "policy", stdlibOnly: true},
	// internal/redact hides secrets in what every other package shows, so it
	// may depend on none of them.
	{dir: "internal/redact", stdlibOnly: true},
	// internal/jsonscan is the raw JSON scanner of the stdio hot paths,
	// shared by proxy and upstream.
	{dir: "internal/jsonscan", stdlibOnly: true},
	// internal/spawn starts the proxy's processes (servers, the reaper, the
	// servers started early by its prestart); what to start is its callers'
	// to say, from the config (internal/earlystart) or from upstream's
	// options.
	{dir: "internal/spawn", stdlibOnly: true},
	// internal/earlystart's init starts the servers while the binary
	// initialises. Go initialises a package after the ones it imports, each
	// step the first ready one by import path: it must reach none of the
	// packages whose initialisation comes after gRPC's, protobuf's and the
	// go-sdk's (os/exec, path/filepath, regexp, net), nor those.
	{dir: "internal/earlystart", forbidden: []string{
		"os/exec", "path/filepath", "regexp", "net", goSDK, "google.golang.org", "go.opentelemetry.io",
		module + "/internal/config", module + "/internal/redact", module + "/policy", module + "/upstream", module + "/proxy",
	}},
	// internal/tokenstore keeps upstream OAuth credentials encrypted at
	// rest (stdlib crypto); it knows no OAuth library, no config and no network.
	{dir: "internal/tokenstore", stdlibOnly: true},
	// proxy/search ranks catalog entries; pure, so it can be tested and
	// benchmarked alone (ARCHITECTURE §1 "Where new capabilities live").
	{dir: "proxy/search", stdlibOnly: true},
	// proxy/pin fingerprints, diffs and scans definitions and reads the lock
	// file's text; pure, no SDK types, so its rules can be tested alone.
	{dir: "proxy/pin", stdlibOnly: true},
	// proxy/internal/wire is the raw JSON-RPC byte work of the lean paths
	// (ARCHITECTURE §1 "The house"): no server, no session, no SDK.
	{dir: "proxy/internal/wire", stdlibOnly: true, allow: []string{module + "/internal/jsonscan"}},
	// proxy/observe turns one record of a request into the audit line, the
	// metrics and the spans; like every room it never imports the root
	// (proxy) or a face (proxy/serve).
	{dir: "proxy/observe", forbiddenPkgs: []string{module + "/proxy"}, forbidden: []string{
		module + "/proxy/serve", module + "/internal/config", module + "/plugins", module + "/cmd", toml, goPlugin,
	}},
	// proxy/guard holds the call-time limits beside policy.Decide (rates,
	// spend, caps, masking, labels): a room, given what it needs by the root.
	{dir: "proxy/guard", within: lower, forbidden: []string{toml, goPlugin, goJOSE, goRedis}},
	// proxy/confirm has a person approve one call: digest, store,
	// elicitation, pages; a room, given the parked call's hooks by the root.
	{dir: "proxy/confirm", within: lower, forbidden: []string{toml, goPlugin, goJOSE, goRedis}},
	// proxy/relay carries what upstreams send towards clients (sampling,
	// elicitation, roots, logs, progress); a room, given the sessions, the
	// servers and the client's capabilities by the root, and reading a
	// backend through upstream/supervise.
	{dir: "proxy/relay", within: withUpstream, forbidden: []string{toml, goPlugin, goJOSE, goRedis}},
	// proxy/session knows who is at the other end: the downstream identity,
	// the peer of a connection, each session's calls in flight and
	// first-list wait; a room, handed the SDK's requests by the root.
	{dir: "proxy/session", within: lower, forbidden: []string{toml, goPlugin, goJOSE, goRedis}},
	// proxy/bridge carries a call across eras: sealed states, parked
	// calls, their rounds of input, retries across replicas; a room, given
	// the state key, the retry relay and the relay by the root. It reaches
	// proxy/relay (and so what the relay reads: upstream): a server's
	// questions that a bridged call carries to a client follow the relay's
	// rules (the server named, includeContext reduced, roots only to a
	// server of one client, a URL elicitation remembered for its
	// completion), which the bridge applies through the relay rather than
	// copy them, and a bridged call's progress goes where the relay routes
	// it. The edge runs one way: proxy/relay reaches only withUpstream.
	{dir: "proxy/bridge", within: append([]string{"proxy/relay"}, withUpstream...), forbidden: []string{toml, goPlugin, goJOSE, goRedis}},
	// proxy/era is pure era translation: it reaches only the raw bytes
	// (wire, jsonscan) and the SDK's types.
	{dir: "proxy/era", within: []string{"proxy/internal/wire", "internal/jsonscan"}, forbidden: []string{toml, goPlugin, goJOSE, goRedis}},
	// proxy/catalog is the immutable merged snapshot (names, decisions,
	// views per identity, pins, tools/list pages), built from each server's
	// listing as plain values (upstream/supervise's Lists); a room, it
	// never reaches the root's backends.
	{dir: "proxy/catalog", within: withUpstream, forbidden: []string{toml, goPlugin, goJOSE, goRedis}},
	// proxy/surface decides each client's catalog mode and holds a
	// catalog's search surface and index (proxy/search), and answers the
	// meta-tools; a room, handed a catalog's visible tools as plain values
	// by the root.
	{dir: "proxy/surface", within: lower, forbidden: []string{toml, goPlugin, goJOSE, goRedis}},
	// proxy/route is the one call pipeline (resolve, admit, connect,
	// bridge, send, filters), in the order the composition gives it: it
	// reaches the rooms below it and one connection (upstream, kept alive by
	// upstream/supervise), never the root, which it reaches through its
	// Host, nor a face.
	{dir: "proxy/route", forbiddenPkgs: []string{module + "/proxy"}, within: append([]string{
		"proxy/surface", "proxy/relay", "proxy/bridge", "proxy/confirm", "proxy/guard", "proxy/observe",
		"proxy/catalog", "proxy/session", "upstream/supervise", "internal/telemetry",
	}, withUpstream...), forbidden: []string{module + "/proxy/serve", toml, goPlugin, goJOSE, goRedis}},
	// proxy/serve/frame is what the two faces share (the frame check, the lean
	// response); below the faces, it reaches only the lowest rooms.
	{dir: "proxy/serve/frame", within: lower, forbidden: []string{toml, goPlugin, goJOSE, goRedis}},
	// proxy/serve/stdio is the stdio face (frame checks, the lean loop, the
	// SDK splice): it reaches the rooms and what both faces share, never the
	// root, which it reaches through its Core, nor the HTTP face.
	{dir: "proxy/serve/stdio", forbiddenPkgs: []string{module + "/proxy"}, within: append([]string{
		"proxy/serve/frame", "proxy/route", "proxy/surface", "proxy/relay", "proxy/bridge", "proxy/confirm", "proxy/guard",
		"proxy/observe", "proxy/catalog", "proxy/session", "internal/telemetry",
	}, withUpstream...), forbidden: []string{module + "/proxy/serve/streamable", toml, goPlugin, goJOSE, goRedis}},
	// proxy/serve/streamable is the HTTP face (endpoint, lean calls and
	// lists, sessions across replicas, event store): it reaches the proxy
	// through its Core interface, the rooms, the frame and one connection
	// (upstream), never the root or the stdio face.
	{dir: "proxy/serve/streamable", within: append([]string{
		"proxy/serve/frame", "proxy/observe", "proxy/relay", "proxy/session", "internal/telemetry",
	}, withUpstream...), forbidden: []string{module + "/proxy/serve/stdio", toml, goPlugin, goJOSE, goRedis}},
	// upstream/supervise keeps one backend alive (start, restart, health,
	// lazy and idle, the cached catalog) and reports to the proxy through
	// the hooks the proxy sets: it knows one connection (upstream), not the
	// proxy, its policy, names or config (ARCHITECTURE §1 "The house").
	{dir: "upstream/supervise", forbidden: []string{
		module + "/proxy", module + "/policy", module + "/plugins", module + "/internal/config",
		module + "/internal/auth", module + "/internal/cluster", module + "/cmd", toml, goPlugin,
	}},
	// upstream is one connection; what keeps it alive (upstream/supervise)
	// uses it, not the other way round.
	{dir: "upstream", forbidden: []string{
		module + "/proxy", module + "/policy", module + "/plugins", module + "/internal/config",
		module + "/cmd", module + "/upstream/supervise", toml, goPlugin,
	}},
	// proxy receives authentication as an http middleware (HTTPOptions.Authenticate)
	// and reads the identity from the SDK's auth.TokenInfo: the JOSE library and
	// internal/auth stay out of it.
	{dir: "proxy", forbidden: []string{
		module + "/internal/config", module + "/internal/auth", module + "/plugins", module + "/cmd", toml, goPlugin, goJOSE,
		module + "/internal/cluster", goRedis,
	}},
	// internal/cluster keeps what replicas share on Redis, as implementations
	// of interfaces that proxy declares; it knows no config file.
	{dir: "internal/cluster", forbidden: []string{
		module + "/internal/config", module + "/internal/auth", module + "/plugins", module + "/cmd", toml, goPlugin, goJOSE,
	}},
	// internal/auth validates tokens and API keys into identities
	// (ARCHITECTURE §1 "Where new capabilities live"); it knows no config file,
	// no proxy and no upstream.
	{dir: "internal/auth", forbidden: []string{
		module + "/proxy", module + "/upstream", module + "/plugins", module + "/internal/config", module + "/cmd", toml, goPlugin,
	}},
	{dir: "plugins", forbidden: []string{
		module + "/proxy", module + "/internal/config", module + "/cmd", toml,
	}},
	{dir: "internal/config", forbidden: []string{
		module + "/proxy", module + "/plugins", module + "/internal/auth", module + "/cmd", goSDK, goJOSE,
	}},
	// internal/clientconf reads and writes client files; it serves nothing.
	{dir: "internal/clientconf", forbidden: []string{
		module + "/proxy", module + "/plugins", module + "/upstream", module + "/cmd", goSDK, goPlugin,
	}},
	// internal/telemetry is the only package that imports Prometheus; the
	// proxy hands it plain values.
	{dir: "internal/telemetry", forbidden: []string{
		module + "/proxy", module + "/plugins", module + "/upstream", module + "/internal/config", module + "/cmd", goSDK, toml, goPlugin,
	}},
	// internal/perf measures the built binaries from outside, as a
	// client does (internal/perf/outside, the script internal/perf/compare):
	// none of Manifold's own packages.
	{dir: "internal/perf", forbidden: []string{
		module + "/proxy", module + "/upstream", module + "/policy", module + "/plugins", module + "/internal/config", module + "/cmd",
	}},
	{dir: ".", forbidden: []string{module + "/cmd"}},
}

func TestDependencyDirection(t *testing.T) {
	root := moduleRoot(t)
	for _, r := range rules {
		t.Run(r.dir, func(t *testing.T) {
			if !hasGoFiles(t, filepath.Join(root, r.dir)) {
				t.Skipf("%s/ has no non-test Go files yet", r.dir)
			}
			pkgs := listDeps(t, root, "./"+r.dir+"/...")
			var roots int
			for _, p := range pkgs {
				if !p.DepOnly {
					roots++
				}
			}
			if roots == 0 {
				t.Fatalf("go list matched no packages under %s/, which has Go files", r.dir)
			}
			for _, v := range r.violations(pkgs) {
				t.Error(v)
			}
		})
	}
}

// pkg is one entry of `go list -deps -json`.
type pkg struct {
	ImportPath string
	Standard   bool
	DepOnly    bool // a dependency only, not matched by the pattern
	Imports    []string
}

// violations reports, for each package matched by r (DepOnly false) and each
// forbidden package it reaches, one line with the shortest import chain.
func (r rule) violations(pkgs []pkg) []string {
	byPath := make(map[string]pkg, len(pkgs))
	for _, p := range pkgs {
		byPath[p.ImportPath] = p
	}
	self := module
	if r.dir != "." {
		self = module + "/" + r.dir
	}
	var out []string
	for _, rootPkg := range pkgs {
		if rootPkg.DepOnly {
			continue
		}
		// Breadth-first, so each reached package records its shortest chain.
		via := map[string]string{rootPkg.ImportPath: ""}
		queue := []string{rootPkg.ImportPath}
		for len(queue) > 0 {
			path := queue[0]
			queue = queue[1:]
			if reason := r.forbids(self, rootPkg.ImportPath, byPath[path]); reason != "" {
				out = append(out, fmt.Sprintf("%s %s: %s", rootPkg.ImportPath, reason, chain(via, path)))
				continue // its own imports are reported through it
			}
			for _, imp := range byPath[path].Imports {
				if imp == "C" {
					continue // cgo's pseudo-package (net imports it), part of the toolchain
				}
				if _, seen := via[imp]; !seen {
					via[imp] = path
					queue = append(queue, imp)
				}
			}
		}
	}
	return out
}

// forbids returns why the package under rule r whose path is from may not reach
// p, or "" if it may.
func (r rule) forbids(self, from string, p pkg) string {
	if r.stdlibOnly && !p.Standard && !under(p.ImportPath, self) && !slices.ContainsFunc(r.allow, func(a string) bool { return under(p.ImportPath, a) }) {
		return "may import only the standard library, but imports " + p.ImportPath
	}
	if slices.Contains(r.forbiddenPkgs, p.ImportPath) {
		return "must not import " + p.ImportPath
	}
	if r.within != nil && under(p.ImportPath, module) && !under(p.ImportPath, self) &&
		!slices.ContainsFunc(r.within, func(w string) bool { return under(p.ImportPath, module+"/"+w) }) {
		return "may reach only " + strings.Join(r.within, ", ") + " of the module, but imports " + p.ImportPath
	}
	for _, f := range r.forbidden {
		if under(p.ImportPath, f) && !under(from, f) {
			return "must not import " + f + ", but imports " + p.ImportPath
		}
	}
	return ""
}

// under reports whether path is prefix or a package below it.
func under(path, prefix string) bool {
	return path == prefix || strings.HasPrefix(path, prefix+"/")
}

// chain renders the import chain that led to path: "a -> b -> path".
func chain(via map[string]string, path string) string {
	var links []string
	for p := path; p != ""; p = via[p] {
		links = append(links, p)
	}
	slices.Reverse(links)
	return strings.Join(links, " -> ")
}

// listDeps runs `go list -deps -json` for pattern in the module at root.
func listDeps(t *testing.T, root, pattern string) []pkg {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "go", "list", "-deps", "-json=ImportPath,Standard,DepOnly,Imports", pattern)
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v\n%s", pattern, err, stderr.Bytes())
	}
	var pkgs []pkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			return pkgs
		} else if err != nil {
			t.Fatalf("decode go list output for %s: %v", pattern, err)
		}
		pkgs = append(pkgs, p)
	}
}

// moduleRoot walks up from the working directory to the folder holding go.mod.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's working directory")
		}
		dir = parent
	}
}

// hasGoFiles reports whether dir or a folder below it (except testdata) holds a
// non-test Go file.
func hasGoFiles(t *testing.T, dir string) bool {
	t.Helper()
	found := false
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") {
			found = true
			return filepath.SkipAll
		}
		return nil
	})
	if errors.Is(err, os.ErrNotExist) {
		return false
	}
	if err != nil {
		t.Fatalf("look for Go files in %s: %v", dir, err)
	}
	return found
}

// TestViolations shows the checker can fail: fake dependency lists with forbidden
// imports must be reported, clean ones must not.
func TestViolations(t *testing.T) {
	const (
		proxy  = module + "/proxy"
		naming = module + "/proxy/naming"
		policy = module + "/policy"
		cmd    = module + "/cmd/manifold"
		cmdSub = module + "/cmd/manifold/internal/flags"
	)
	proxyRule := rule{dir: "proxy", forbidden: []string{module + "/cmd", toml, goPlugin}}
	tests := []struct {
		name string
		rule rule
		pkgs []pkg
		want []string
	}{
		{
			name: "transitive forbidden import is reported with its chain",
			rule: proxyRule,
			pkgs: []pkg{
				{ImportPath: proxy, Imports: []string{"fmt", naming}},
				{ImportPath: naming, Imports: []string{"strings", toml}},
				{ImportPath: toml, DepOnly: true, Imports: []string{"bufio"}},
				{ImportPath: "fmt", Standard: true, DepOnly: true},
				{ImportPath: "strings", Standard: true, DepOnly: true},
				{ImportPath: "bufio", Standard: true, DepOnly: true},
			},
			want: []string{
				proxy + " must not import " + toml + ", but imports " + toml + ": " + proxy + " -> " + naming + " -> " + toml,
				naming + " must not import " + toml + ", but imports " + toml + ": " + naming + " -> " + toml,
			},
		},
		{
			name: "subpackage of a forbidden prefix is forbidden",
			rule: proxyRule,
			pkgs: []pkg{
				{ImportPath: proxy, Imports: []string{goPlugin + "/internal/cmdrunner"}},
				{ImportPath: goPlugin + "/internal/cmdrunner", DepOnly: true},
			},
			want: []string{
				proxy + " must not import " + goPlugin + ", but imports " + goPlugin + "/internal/cmdrunner: " +
					proxy + " -> " + goPlugin + "/internal/cmdrunner",
			},
		},
		{
			name: "name sharing a prefix is not a subpackage",
			rule: proxyRule,
			pkgs: []pkg{
				{ImportPath: proxy, Imports: []string{toml + "x"}},
				{ImportPath: toml + "x", DepOnly: true},
			},
			want: nil,
		},
		{
			name: "stdlib only",
			rule: rule{dir: "policy", stdlibOnly: true},
			pkgs: []pkg{
				{ImportPath: policy, Imports: []string{"path", policy + "/glob", "github.com/google/go-cmp/cmp"}},
				{ImportPath: policy + "/glob", Imports: []string{"path"}},
				{ImportPath: "path", Standard: true, DepOnly: true},
				{ImportPath: "github.com/google/go-cmp/cmp", DepOnly: true},
			},
			want: []string{
				policy + " may import only the standard library, but imports github.com/google/go-cmp/cmp: " +
					policy + " -> github.com/google/go-cmp/cmp",
			},
		},
		{
			name: "stdlib only, with an allowed package",
			rule: rule{dir: "proxy/internal/wire", stdlibOnly: true, allow: []string{module + "/internal/jsonscan"}},
			pkgs: []pkg{
				{ImportPath: module + "/proxy/internal/wire", Imports: []string{"bytes", module + "/internal/jsonscan", goSDK + "/jsonrpc"}},
				{ImportPath: module + "/internal/jsonscan", DepOnly: true, Imports: []string{"bytes"}},
				{ImportPath: goSDK + "/jsonrpc", DepOnly: true},
				{ImportPath: "bytes", Standard: true, DepOnly: true},
			},
			want: []string{
				module + "/proxy/internal/wire may import only the standard library, but imports " + goSDK + "/jsonrpc: " +
					module + "/proxy/internal/wire -> " + goSDK + "/jsonrpc",
			},
		},
		{
			name: "a room may import its siblings but not the root",
			rule: rule{dir: "proxy/observe", forbiddenPkgs: []string{proxy}},
			pkgs: []pkg{
				{ImportPath: proxy + "/observe", Imports: []string{naming, proxy}},
				{ImportPath: naming, DepOnly: true},
				{ImportPath: proxy, DepOnly: true},
			},
			want: []string{
				proxy + "/observe must not import " + proxy + ": " + proxy + "/observe -> " + proxy,
			},
		},
		{
			name: "a room reaches only the rooms below it, never the root",
			rule: rule{dir: "proxy/naming", within: []string{"policy"}},
			pkgs: []pkg{
				{ImportPath: naming, Imports: []string{naming + "/inner", policy + "/glob"}},
				{ImportPath: naming + "/inner", Imports: []string{proxy}},
				{ImportPath: policy + "/glob", DepOnly: true},
				{ImportPath: proxy, DepOnly: true, Imports: []string{cmd}},
				{ImportPath: cmd, DepOnly: true},
			},
			want: []string{
				naming + " may reach only policy of the module, but imports " + proxy + ": " + naming + " -> " + naming + "/inner -> " + proxy,
				naming + "/inner may reach only policy of the module, but imports " + proxy + ": " + naming + "/inner -> " + proxy,
			},
		},
		{
			name: "nothing imports cmd, but cmd may import its own packages",
			rule: rule{dir: ".", forbidden: []string{module + "/cmd"}},
			pkgs: []pkg{
				{ImportPath: cmd, Imports: []string{cmdSub, proxy}},
				{ImportPath: cmdSub},
				{ImportPath: proxy, Imports: []string{cmdSub}},
			},
			want: []string{
				proxy + " must not import " + module + "/cmd, but imports " + cmdSub + ": " + proxy + " -> " + cmdSub,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.rule.violations(tt.pkgs)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("violations (-want +got):\n%s", diff)
			}
		})
	}
}
