//lint:file-ignore SA1019 roots, sampling and logging are part of the protocol versions the proxy serves

package upstream

// This file decides which protocol era a server speaks (issue 11): the
// initialize era ("legacy", 2024-11-05 … 2025-11-25) or the stateless one
// (2026-07-28: server/discover, _meta on every request). A child process is
// probed with server/discover before the SDK connects, or, when the client
// it serves speaks the initialize era, sent initialize first (probed only if
// it refuses); the verdict is cached per server so that restarts do not pay
// the probe again.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manifold-mcp/manifold/internal/jsonscan"
)

// Values of Options.Protocol.
const (
	ProtocolAuto   = "auto"
	ProtocolModern = ModernVersion
	ProtocolLegacy = "legacy"
)

// DefaultProbeTimeout is the zero value of Options.ProbeTimeout: how long
// the probe waits for a decisive answer. A started server answers
// server/discover, or an error, or the ping sent behind it, in
// milliseconds; one that answers nothing within it (still starting, or deaf
// to both) is then initialized on the same process, so the wait costs a
// slow server nothing and a deaf one this once (the verdict is cached).
const DefaultProbeTimeout = 2 * time.Second

// Where an upstream's era came from (EraInfo.Source).
const (
	SourceProbe = "probe" // probed at this start
	SourceCache = "cache" // a probe at an earlier start, cached
	SourcePin   = "pin"   // Options.Protocol pins it (or the transport has one era)
)

// EraInfo says which era an upstream speaks and how that was decided.
type EraInfo struct {
	// Modern is true for the stateless era (2026-07-28).
	Modern bool `json:"modern"`
	// Version is the negotiated protocol version.
	Version string `json:"version"`
	// Source is SourceProbe, SourceCache or SourcePin.
	Source string `json:"source"`
	// Dual is true for a server that speaks both eras (its DiscoverResult
	// lists an initialize-era version too); it is then spoken to in the era
	// of the client it serves when Options.PreferLegacy says so.
	Dual bool `json:"dual,omitempty"`
	// Probe says what the probe saw ("discover result", "error -32601",
	// "no answer within 2s", …); empty when there was no probe.
	Probe string `json:"probe,omitempty"`
	// ProbeCost is how long the probe took, including stopping a probe
	// process the server could not be trusted to keep; zero without a probe.
	ProbeCost time.Duration `json:"-"`
}

// Era returns which era the server speaks and how that was decided.
func (u *Upstream) Era() EraInfo {
	e := u.era
	e.Version = u.ProtocolVersion()
	e.Modern = u.Modern()
	return e
}

// EraCache remembers each server's era across starts, so that supervision
// restarts and per-session processes do not probe again; with a file
// (NewEraCacheFile), across runs of the proxy too (a client that launches
// Manifold over stdio for each of its sessions). Keys are stored hashed:
// they hold the servers' environment, which may hold secrets. It is safe for
// concurrent use. The zero value is not usable; use NewEraCache.
type EraCache struct {
	path   string        // "" = memory only
	maxAge time.Duration // entries of the file older than this are ignored
	log    *slog.Logger

	// loaded is closed once the file's entries are in m (NewEraCacheFile
	// reads it in the background); nil for a cache kept in memory only.
	loaded chan struct{}

	mu sync.Mutex
	m  map[string]eraEntry // guarded by mu; hashed key -> verdict
}

type eraEntry struct {
	Modern bool `json:"modern"`
	// Dual: a modern server whose DiscoverResult also lists an
	// initialize-era version (see Options.PreferLegacy).
	Dual bool `json:"dual,omitempty"`
	// Init: of the initialize era, as an initialize sent first said (see
	// initializeFirst), with no server/discover sent: whether it speaks
	// 2026-07-28 too is not known, and a start that prefers that era
	// probes it.
	Init bool      `json:"init,omitempty"`
	At   time.Time `json:"at"`
}

// NewEraCache returns an empty cache kept in memory.
func NewEraCache() *EraCache { return &EraCache{m: make(map[string]eraEntry)} }

// NewEraCacheFile returns a cache kept in memory and in the file at path:
// what the file holds is read now, in the background, and the cache's first
// use waits for it (entries older than maxAge are ignored, so that a server
// upgraded in place is probed again at least that often); every new verdict
// is merged into it. A file that cannot be read or written only costs
// probes; it is logged to log (nil: discarded). The read overlaps whatever
// the caller does before the first server starts: a file that many servers
// and runs have added to takes a few milliseconds to decode.
func NewEraCacheFile(path string, maxAge time.Duration, log *slog.Logger) *EraCache {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &EraCache{path: path, maxAge: maxAge, log: log, m: make(map[string]eraEntry), loaded: make(chan struct{})}
	go func() {
		defer close(c.loaded)
		m := c.readFile()
		c.mu.Lock()
		defer c.mu.Unlock()
		for k, e := range m {
			c.m[k] = e
		}
	}()
	return c
}

// wait returns once the file's entries are in the cache.
func (c *EraCache) wait() {
	if c.loaded != nil {
		<-c.loaded
	}
}

func hashKey(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:16])
}

func (c *EraCache) get(key string) (modern, ok bool) {
	if c == nil || key == "" {
		return false, false
	}
	c.wait()
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[hashKey(key)]
	if ok && c.path != "" && time.Since(e.At) > c.maxAge {
		return false, false
	}
	return e.Modern, ok
}

func (c *EraCache) put(key string, modern bool) { c.putVerdict(key, modern, false) }

// dual reports whether the cache holds key as a modern server that speaks
// the initialize era too.
func (c *EraCache) dual(key string) bool {
	if c == nil || key == "" {
		return false
	}
	c.wait()
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[hashKey(key)]
	return ok && e.Modern && e.Dual && (c.path == "" || time.Since(e.At) <= c.maxAge)
}

// byInitialize reports whether the cache holds key as a server of the
// initialize era learned from its answer to initialize, not from a probe.
func (c *EraCache) byInitialize(key string) bool {
	if c == nil || key == "" {
		return false
	}
	c.wait()
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[hashKey(key)]
	return ok && !e.Modern && e.Init
}

// putVerdict records key's era; dual only with modern.
func (c *EraCache) putVerdict(key string, modern, dual bool) {
	c.set(key, eraEntry{Modern: modern, Dual: dual && modern})
}

// putInit records key as a server of the initialize era that answered an
// initialize sent first (whether it speaks 2026-07-28 too is unknown).
func (c *EraCache) putInit(key string) { c.set(key, eraEntry{Init: true}) }

// set records key's entry e (its At is now).
func (c *EraCache) set(key string, e eraEntry) {
	if c == nil || key == "" {
		return
	}
	c.wait()
	c.mu.Lock()
	defer c.mu.Unlock()
	h := hashKey(key)
	if old, ok := c.m[h]; ok && old.Modern == e.Modern && old.Dual == e.Dual && old.Init == e.Init && (c.path == "" || time.Since(old.At) < c.maxAge/2) {
		return
	}
	e.At = time.Now().UTC()
	c.m[h] = e
	if c.path != "" {
		c.writeFile(h)
	}
}

// forget drops key, so that the next start probes again.
func (c *EraCache) forget(key string) {
	if c == nil || key == "" {
		return
	}
	c.wait()
	c.mu.Lock()
	defer c.mu.Unlock()
	h := hashKey(key)
	if _, ok := c.m[h]; !ok {
		return
	}
	delete(c.m, h)
	if c.path != "" {
		c.writeFile(h)
	}
}

// readFile returns the fresh entries of the file; nil if there is none.
func (c *EraCache) readFile() map[string]eraEntry {
	data, err := os.ReadFile(c.path)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			c.log.Warn("cannot read the protocol era cache", "file", c.path, "err", err)
		}
		return nil
	}
	var m map[string]eraEntry
	if err := json.Unmarshal(data, &m); err != nil {
		c.log.Warn("ignoring an unreadable protocol era cache", "file", c.path, "err", err)
		return nil
	}
	for k, e := range m {
		if time.Since(e.At) > c.maxAge {
			delete(m, k)
		}
	}
	return m
}

// maxEraEntries bounds the entries of the era file: a proxy reads the
// whole file before its first server starts, and one that many configs
// and runs have added to would delay every start (measured: 4,348 entries,
// 391 KB, 10.7 ms to decode; 512 entries 1.3 ms). The oldest verdicts go
// first; a server that loses its own is probed again.
const maxEraEntries = 256

// writeFile merges the entry h into the file, atomically (another proxy may
// write it too: the last rename wins, and what it lost is probed again),
// keeping the newest maxEraEntries entries. Called with c.mu held.
func (c *EraCache) writeFile(h string) {
	m := c.readFile()
	if m == nil {
		m = make(map[string]eraEntry)
	}
	if e, ok := c.m[h]; ok {
		m[h] = e
	} else {
		delete(m, h)
	}
	if over := len(m) - maxEraEntries; over > 0 {
		keys := slices.Collect(maps.Keys(m))
		slices.SortFunc(keys, func(a, b string) int { return m[a].At.Compare(m[b].At) })
		for _, k := range keys {
			if over == 0 {
				break
			}
			if k != h {
				delete(m, k)
				over--
			}
		}
	}
	data, err := json.Marshal(m)
	if err == nil {
		err = os.MkdirAll(filepath.Dir(c.path), 0o700)
	}
	tmp := fmt.Sprintf("%s.%d.tmp", c.path, os.Getpid())
	if err == nil {
		err = os.WriteFile(tmp, data, 0o600)
	}
	if err == nil {
		err = os.Rename(tmp, c.path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		c.log.Warn("cannot write the protocol era cache; servers are probed again at the next start", "file", c.path, "err", err)
	}
}

// Len returns the number of servers cached.
func (c *EraCache) Len() int {
	c.wait()
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}

// childEraKey identifies a child server for the cache: its command line,
// environment, folder and the identity of the executable (resolved path,
// size and modification time), so that an upgraded binary is probed again.
// A server that a launcher fetches (npx pkg@latest) keeps its key across
// versions of the package; a cached modern verdict that then fails its
// discover falls back once and is corrected.
func childEraKey(opts Options) string {
	path := opts.Command
	if p, err := exec.LookPath(opts.Command); err == nil {
		path = p
	}
	var id string
	if fi, err := os.Stat(path); err == nil {
		id = fmt.Sprintf("%d@%d", fi.Size(), fi.ModTime().UnixNano())
	}
	b, _ := json.Marshal(struct {
		Path, ID, Dir string
		Args, Env     []string
	}{path, id, opts.Dir, opts.Args, opts.Env})
	return "cmd:" + string(b)
}

// remoteEraKey identifies a remote server by its origin.
func remoteEraKey(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "url:" + raw
	}
	return "url:" + strings.ToLower(u.Scheme) + "://" + strings.ToLower(u.Host)
}

// offeredCaps returns the client capabilities the SDK client for opts
// declares on 2026-07-28 (mcp.Client's own computation, which is not
// exported), in their wire shape (roots from RootsV2).
func offeredCaps(opts Options) json.RawMessage {
	m, err := wireCaps(opts, "2026-07-28")
	if err != nil {
		return json.RawMessage(`{}`)
	}
	out, _ := json.Marshal(m)
	return out
}

// wireCaps is the capabilities the SDK client for opts declares at version,
// as mcp.Client computes them (not exported; TestInitializeParamsAsSDK holds
// them equal), in their wire shape: roots is RootsV2 (the SDK's fix of its
// #607).
func wireCaps(opts Options, version string) (map[string]json.RawMessage, error) {
	var co mcp.ClientOptions
	if opts.Client != nil {
		co = *opts.Client
	}
	caps := &mcp.ClientCapabilities{RootsV2: &mcp.RootCapabilities{ListChanged: true}}
	if co.Capabilities != nil {
		c := *co.Capabilities
		caps = &c
	}
	if (co.CreateMessageHandler != nil || co.CreateMessageWithToolsHandler != nil) && caps.Sampling == nil {
		caps.Sampling = &mcp.SamplingCapabilities{}
		if co.CreateMessageWithToolsHandler != nil {
			caps.Sampling.Tools = &mcp.SamplingToolsCapabilities{}
		}
	}
	if co.ElicitationHandler != nil && caps.Elicitation == nil {
		caps.Elicitation = &mcp.ElicitationCapabilities{}
		if version >= "2025-11-25" {
			caps.Elicitation.Form = &mcp.FormElicitationCapabilities{}
		}
	}
	b, err := json.Marshal(caps)
	if err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	delete(m, "roots")
	if caps.RootsV2 != nil {
		if m["roots"], err = json.Marshal(caps.RootsV2); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// Keys of the per-request _meta of the stateless era.
const (
	metaVersion  = "io.modelcontextprotocol/protocolVersion"
	metaInfo     = "io.modelcontextprotocol/clientInfo"
	metaCaps     = "io.modelcontextprotocol/clientCapabilities"
	metaLogLevel = "io.modelcontextprotocol/logLevel"
)

// metaMember is one member of the _meta the raw path adds to a request.
type metaMember struct {
	key   string // unquoted
	value json.RawMessage
}

// requestMeta returns the _meta members every request to a modern server
// carries: the protocol version, Manifold's client info and the
// capabilities offered to the server.
func requestMeta(opts Options) []metaMember {
	info := opts.ClientInfo
	if info == nil {
		info = &mcp.Implementation{Name: "manifold"}
	}
	ib, _ := json.Marshal(info)
	return []metaMember{
		{metaVersion, json.RawMessage(`"` + ModernVersion + `"`)},
		{metaInfo, ib},
		{metaCaps, offeredCaps(opts)},
	}
}

// appendMeta appends the members of m as `"key":value,` pairs.
func appendMeta(dst []byte, m []metaMember) []byte {
	for _, mm := range m {
		dst = append(dst, '"')
		dst = append(dst, mm.key...)
		dst = append(dst, `":`...)
		dst = append(dst, mm.value...)
		dst = append(dst, ',')
	}
	return dst
}

// withMeta returns params (a valid JSON object) with the members of m added
// to its _meta object where absent: keys already there win. It copies into
// dst's spare room where it can. Params whose top-level or _meta keys are
// written with escapes are decoded and re-encoded, so that a key spelled
// "_m\u0065ta" cannot smuggle a second _meta past the check.
func withMeta(params []byte, m []metaMember) []byte {
	if len(m) == 0 {
		return params
	}
	start, end, ok := findMember(params, "_meta")
	if !ok {
		if bytes.IndexByte(params, '\\') >= 0 && hasEscapedKey(params) {
			return withMetaSlow(params, m)
		}
		i := bytes.IndexByte(params, '{')
		out := make([]byte, 0, len(params)+256)
		out = append(out, params[:i+1]...)
		out = append(out, `"_meta":{`...)
		out = appendMeta(out, m)
		out[len(out)-1] = '}'
		rest := bytes.TrimLeft(params[i+1:], " \t\r\n")
		if len(rest) > 0 && rest[0] != '}' {
			out = append(out, ',')
		}
		return append(out, params[i+1:]...)
	}
	meta := params[start:end]
	if len(meta) == 0 || meta[0] != '{' {
		return withMetaSlow(params, m) // not an object: let the server say so
	}
	if hasEscapedKey(params) || hasEscapedKey(meta) {
		return withMetaSlow(params, m)
	}
	var missing []metaMember
	for _, mm := range m {
		if _, _, ok := findMember(meta, mm.key); !ok {
			missing = append(missing, mm)
		}
	}
	if len(missing) == 0 {
		return params
	}
	out := make([]byte, 0, len(params)+256)
	out = append(out, params[:start+1]...)
	out = appendMeta(out, missing)
	rest := bytes.TrimLeft(meta[1:], " \t\r\n")
	if len(rest) > 0 && rest[0] == '}' {
		out = out[:len(out)-1]
	}
	out = append(out, params[start+1:]...)
	return out
}

// withMetaSlow is withMeta by decoding: for params with escaped keys.
func withMetaSlow(params []byte, m []metaMember) []byte {
	var obj map[string]json.RawMessage
	if json.Unmarshal(params, &obj) != nil {
		return params
	}
	var meta map[string]json.RawMessage
	if raw, ok := obj["_meta"]; ok {
		if json.Unmarshal(raw, &meta) != nil {
			return params // not an object: the server says what is wrong
		}
	}
	if meta == nil {
		meta = make(map[string]json.RawMessage)
	}
	for _, mm := range m {
		if _, ok := meta[mm.key]; !ok {
			meta[mm.key] = mm.value
		}
	}
	obj["_meta"], _ = json.Marshal(meta)
	out, err := json.Marshal(obj)
	if err != nil {
		return params
	}
	return out
}

// findMember finds the value of the top-level member key of obj, a valid
// JSON object. Keys written with escapes are not recognised.
func findMember(obj []byte, key string) (start, end int, ok bool) {
	i := jsonscan.SkipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return 0, 0, false
	}
	i = jsonscan.SkipSpace(obj, i+1)
	for i < len(obj) && obj[i] == '"' {
		kend := jsonscan.SkipString(obj, i)
		k := obj[i+1 : kend-1]
		i = jsonscan.SkipSpace(obj, kend)
		if i >= len(obj) || obj[i] != ':' {
			return 0, 0, false
		}
		i = jsonscan.SkipSpace(obj, i+1)
		vend := jsonscan.SkipValue(obj, i)
		if string(k) == key {
			return i, vend, true
		}
		i = jsonscan.SkipSpace(obj, vend)
		if i >= len(obj) || obj[i] != ',' {
			return 0, 0, false
		}
		i = jsonscan.SkipSpace(obj, i+1)
	}
	return 0, 0, false
}

// hasEscapedKey reports whether a top-level key of obj holds a backslash.
func hasEscapedKey(obj []byte) bool {
	i := jsonscan.SkipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return false
	}
	i = jsonscan.SkipSpace(obj, i+1)
	for i < len(obj) && obj[i] == '"' {
		kend := jsonscan.SkipString(obj, i)
		if bytes.IndexByte(obj[i:kend], '\\') >= 0 {
			return true
		}
		i = jsonscan.SkipSpace(obj, kend)
		if i >= len(obj) || obj[i] != ':' {
			return false
		}
		i = jsonscan.SkipValue(obj, jsonscan.SkipSpace(obj, i+1))
		i = jsonscan.SkipSpace(obj, i)
		if i >= len(obj) || obj[i] != ',' {
			return false
		}
		i = jsonscan.SkipSpace(obj, i+1)
	}
	return false
}

// probeOutcome is what a server/discover probe saw.
type probeOutcome struct {
	// verdict: verdictModern (a DiscoverResult listing ModernVersion; the
	// process is kept and the result replayed to the SDK), verdictKnows
	// (-32022: the server knows the method but not the version) or
	// verdictLegacy (anything else). Both of the last go on to initialize
	// on the same process, unless it exited or wrote garbage (startChild).
	verdict int
	dual    bool            // verdictModern, and the result lists an initialize-era version too
	what    string          // for EraInfo.Probe and errors
	result  json.RawMessage // the DiscoverResult, for verdictModern
	err     *jsonrpc.Error  // the error answer, if any
}

const (
	verdictLegacy = iota
	verdictModern
	verdictKnows
)

// classify turns the answer to a probe into an outcome.
func classify(result json.RawMessage, err error, timeout time.Duration) probeOutcome {
	var we *jsonrpc.Error
	switch {
	case errors.As(err, &we):
		o := probeOutcome{what: fmt.Sprintf("error %d (%s)", we.Code, clean(we.Message, 200)), err: we}
		if we.Code == mcp.CodeUnsupportedProtocolVersion {
			o.verdict = verdictKnows
		}
		return o
	case errors.Is(err, errProbeTimeout):
		return probeOutcome{what: fmt.Sprintf("no answer within %v", timeout)}
	case errors.Is(err, errProbeIgnored):
		return probeOutcome{what: "no answer, while it answered the ping sent after it"}
	case errors.Is(err, ErrClosed):
		return probeOutcome{what: "the server exited"}
	case err != nil:
		return probeOutcome{what: clean(err.Error(), 300)}
	}
	var dr struct {
		SupportedVersions []string `json:"supportedVersions"`
	}
	if e := json.Unmarshal(result, &dr); e != nil {
		return probeOutcome{what: "a result that is not a DiscoverResult"}
	}
	var full mcp.DiscoverResult
	if e := json.Unmarshal(result, &full); e != nil {
		return probeOutcome{what: "a result that is not a DiscoverResult"}
	}
	if !slices.Contains(dr.SupportedVersions, ModernVersion) {
		return probeOutcome{what: fmt.Sprintf("a DiscoverResult without %s (supported: %s)", ModernVersion, clean(strings.Join(dr.SupportedVersions, ", "), 200))}
	}
	dual := slices.ContainsFunc(dr.SupportedVersions, func(v string) bool { return slices.Contains(legacyVersions, v) })
	what := "discover result"
	if dual {
		what = "discover result (both eras)"
	}
	return probeOutcome{verdict: verdictModern, dual: dual, what: what, result: result}
}

var errProbeTimeout = errors.New("probe timeout")

// legacyVersions are the initialize-era versions the proxy speaks upstream.
var legacyVersions = []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

// Bounds on what a server says about itself, which the proxy shows to
// clients (instructions) and people (status, logs).
const (
	maxInstructions = 64 << 10
	maxInfoField    = 256
)

// sanitize bounds the instructions and server info of ir in a copy, and
// drops control characters (escape sequences, bidi overrides) from the
// server info; instructions keep their newlines and tabs.
func sanitize(ir *mcp.InitializeResult) *mcp.InitializeResult {
	if ir == nil {
		return nil
	}
	c := *ir
	c.Instructions = bound(stripControls(ir.Instructions, true), maxInstructions)
	if ir.ServerInfo != nil {
		si := *ir.ServerInfo
		si.Name = clean(si.Name, maxInfoField)
		si.Version = clean(si.Version, maxInfoField)
		si.Title = clean(si.Title, maxInfoField)
		c.ServerInfo = &si
	}
	return &c
}

// clean is s without control characters, at most n bytes.
func clean(s string, n int) string { return bound(stripControls(s, false), n) }

// escapes matches terminal escape sequences: CSI (ESC [ ... final byte),
// OSC (ESC ] ... BEL or ESC \) and two-character ones, removed whole so
// that no "[31m" is left behind.
var escapes = regexp.MustCompile(`\x1b(?:\[[0-?]*[ -/]*[@-~]?|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-_]?)`)

// stripControls drops terminal escape sequences and control and
// bidi-formatting characters, except newlines and tabs when keepLines.
func stripControls(s string, keepLines bool) string {
	if strings.IndexByte(s, 0x1b) >= 0 {
		s = escapes.ReplaceAllString(s, "")
	}
	ok := func(r rune) bool {
		if keepLines && (r == '\n' || r == '\t') {
			return true
		}
		return !unicode.IsControl(r) && !unicode.Is(unicode.Cf, r) && r != utf8.RuneError
	}
	clean := true
	for _, r := range s {
		if !ok(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	return strings.Map(func(r rune) rune {
		if ok(r) {
			return r
		}
		return -1
	}, s)
}

// bound cuts s to at most n bytes at a rune boundary, marking the cut.
func bound(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const mark = "…(truncated)"
	cut := n - len(mark)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}

// checkProtocol validates Options.Protocol.
func checkProtocol(name, p string) error {
	switch p {
	case "", ProtocolAuto, ProtocolModern, ProtocolLegacy:
		return nil
	}
	return fmt.Errorf("upstream %q: unknown protocol %q; use %q, %q or %q", name, p, ProtocolAuto, ProtocolModern, ProtocolLegacy)
}

// startChild spawns opts.Command and connects to it in the era that
// opts.Protocol, the cache or a probe decides. A server that fails the probe
// is initialized on the same process; a fresh one is started only if the
// probe process exited, or wrote garbage and answered nothing (and, for a
// server of both eras serving a client of the initialize era, see below).
// For a client of the initialize era (Options.PreferLegacy), a server whose
// era is not cached gets initialize first instead (initializeFirst), and
// the probe only if it refuses it, on the same process.
// On failure every process it started has been killed and reaped.
func (u *Upstream) startChild(ctx context.Context, opts Options) error {
	key := childEraKey(opts)
	probeTimeout := opts.ProbeTimeout
	if probeTimeout <= 0 {
		probeTimeout = DefaultProbeTimeout
	}
	probeTimeout = min(probeTimeout, opts.StartupTimeout) // the start is bounded as a whole
	pinned := opts.Protocol == ProtocolModern
	probe := true
	initFirst := false // initialize first, probe only if it is refused
	u.era.Source = SourceProbe
	switch {
	case opts.Protocol == ProtocolLegacy:
		u.era.Source = SourcePin
		probe = false
	case pinned:
		u.era.Source = SourcePin
		probeTimeout = opts.StartupTimeout
	default:
		modern, ok := opts.Eras.get(key)
		if ok && !modern && !opts.PreferLegacy && opts.Eras.byInitialize(key) {
			// Of the initialize era, as its answer to an initialize said;
			// whether it speaks 2026-07-28 too, which this start
			// prefers, is not known: probed.
			ok = false
		}
		if !ok && opts.PreferLegacy {
			initFirst = true
		}
		if ok {
			u.era.Source = SourceCache
			if !modern {
				probe = false
				break
			}
			if opts.PreferLegacy && opts.Eras.dual(key) {
				// Both eras, and the client this process serves speaks
				// the initialize era: no probe, no bridge.
				u.era.Dual = true
				probe = false
				break
			}
			// Believed modern: its discover is its handshake, so it is
			// given the startup timeout; one that fails it falls back.
			probeTimeout = opts.StartupTimeout
		}
	}
	c, err := u.spawnChild(opts)
	if err != nil {
		return err
	}
	if !probe {
		err := u.connectChild(ctx, c, opts, protocolVersion)
		if err != nil && u.era.Source == SourceCache && ctx.Err() == nil {
			// Perhaps no longer of the initialize era: probe next time
			// (not when the start was cancelled: a client that quits
			// while its servers start says nothing of their era).
			opts.Eras.forget(key)
		}
		return err
	}

	began := time.Now()
	var refused string // initializeFirst's refusal
	if initFirst {
		done, why, err := u.initializeFirst(ctx, c, opts, key)
		if done {
			return err
		}
		// Refused (a server of 2026-07-28 only): its discover is its
		// handshake, on this process.
		refused, probeTimeout = why, opts.StartupTimeout
	}
	u.reqMeta = requestMeta(opts)
	c.probing.Store(true)
	w := c.probe(ctx, u.reqMeta, probeTimeout)
	if ctx.Err() != nil {
		c.abort()
		return fmt.Errorf("upstream %q: startup cancelled: %w", u.name, ctx.Err())
	}
	o := classify(w.result, w.err, probeTimeout)
	u.era.Probe = o.what
	if refused != "" {
		u.era.Probe = "initialize refused with " + refused + ", then " + o.what
	}
	// cost is what the probe added to the start: the wait after the
	// server's first answer (it was starting until then, probe or not), or
	// the whole wait when it answered nothing.
	cost := func() time.Duration {
		if w.ready.IsZero() {
			return max(time.Since(began), time.Nanosecond)
		}
		return max(time.Since(w.ready), time.Nanosecond)
	}
	if o.verdict != verdictModern {
		u.era.Source = SourceProbe // a cached modern verdict was wrong
	}
	exited := errors.Is(w.err, ErrClosed)
	garbage := errors.Is(w.err, errProbeTimeout) && c.noisy.Load()
	switch {
	case o.verdict == verdictModern && o.dual && opts.PreferLegacy && !pinned && refused == "":
		// Both eras, for a client of the initialize era: that era end to
		// end (a server's legacy-style sampling or elicitation does not
		// work in 2026-07-28), on a fresh process: the probe has set this
		// one up for 2026-07-28 (a go-sdk server keeps the discover's
		// client and version as its session's and refuses a later
		// initialize as a duplicate). Only this first start pays it: the
		// cache then says "both eras", and no probe is sent.
		u.era.ProbeCost = time.Since(began)
		u.era.Dual = true
		c.probeStop.Store(true)
		c.abort()
		u.log.Info("server speaks both eras; starting a fresh process in the initialize era of the client it serves", "probe_ms", u.era.ProbeCost.Milliseconds(), "probe_pid", c.pid)
		u.reset()
		if c, err = u.spawnChild(opts); err != nil {
			return err
		}
		if err := u.connectChild(ctx, c, opts, protocolVersion); err != nil {
			return err
		}
		opts.Eras.putVerdict(key, true, true)
		return nil
	case o.verdict == verdictModern:
		u.era.Dual = o.dual
		u.era.ProbeCost = cost()
		c.probing.Store(false)
		c.replay.Store(&o.result)
		c.meta.Store(&u.reqMeta)
		if err := u.connectChild(ctx, c, opts, ModernVersion); err != nil {
			if ctx.Err() == nil {
				opts.Eras.forget(key) // probe again next time
			}
			return err
		}
		opts.Eras.putVerdict(key, u.Modern(), o.dual)
		return nil
	case pinned:
		c.probeStop.Store(exited || garbage)
		c.abort()
		if o.verdict == verdictKnows {
			return fmt.Errorf("upstream %q: protocol = %q is pinned, but the server refused it (%s%s); set protocol = %q or %q",
				u.name, ModernVersion, o.what, supportedOf(o.err), ProtocolAuto, ProtocolLegacy)
		}
		return fmt.Errorf("upstream %q: protocol = %q is pinned, but the server answered server/discover with %s, so it does not speak %s%s; set protocol = %q (or %q)",
			u.name, ModernVersion, o.what, ModernVersion, withTail(c.stderr.String()), ProtocolAuto, ProtocolLegacy)
	case exited || garbage:
		// This process is dead, or wrote what is not JSON-RPC and answered
		// nothing: a fresh one gets the initialize.
		if garbage {
			u.era.Probe = o.what + ", after a line that is not JSON-RPC"
		}
		c.probeStop.Store(true)
		c.abort()
		u.era.ProbeCost = time.Since(began)
		u.log.Info("server/discover probe says initialize era, and the probe process cannot be kept; starting a fresh process", "probe", u.era.Probe, "probe_ms", u.era.ProbeCost.Milliseconds(), "probe_pid", c.pid)
		u.reset()
		if c, err = u.spawnChild(opts); err != nil {
			return err
		}
		if err := u.connectChild(ctx, c, opts, protocolVersion); err != nil {
			return err
		}
		opts.Eras.put(key, false)
		return nil
	}
	// The initialize era, on this process: it answered server/discover
	// with an error or a result without 2026-07-28, or ignored it while it
	// answered the ping, or answered nothing yet (still starting, or deaf
	// to both: initialize is what it waits for). A late answer to the
	// probe never reaches the SDK (w.late).
	u.era.ProbeCost = cost()
	c.probing.Store(false)
	c.meta.Store(nil)
	u.log.Debug("server/discover probe says initialize era; initializing the same process", "probe", o.what, "probe_ms", u.era.ProbeCost.Milliseconds())
	err = u.connectChild(ctx, c, opts, protocolVersion)
	late, ok := lateModern(w.late)
	if !ok && err != nil && refusedVersion(err) && w.late != nil {
		// It refused the initialize era's version before its answer to
		// server/discover came (a go-sdk server answers initialize first).
		late, ok = probeOutcome{what: "initialize refused with -32022"}, true
	}
	if ok {
		// Its answer to server/discover came after all, listing 2026-07-28.
		if err == nil {
			// It speaks both eras (the initialize worked): kept, and
			// the next start, believing it modern, speaks 2026-07-28.
			u.log.Info("server answered server/discover late, listing "+ModernVersion+"; this process stays in the initialize era, the next start speaks "+ModernVersion, "probe", late.what)
			opts.Eras.putVerdict(key, true, late.dual)
			return nil
		}
		if ctx.Err() != nil {
			return err
		}
		// A server of 2026-07-28 only that started slower than the probe
		// waited: it refused the initialize, so a fresh process (it is
		// installed by now) speaks its era.
		u.log.Info("server answered server/discover late, listing "+ModernVersion+", and refused initialize; starting a fresh process in "+ModernVersion, "probe", late.what, "err", err)
		u.era.Probe = late.what + " (late)"
		u.era.Dual = late.dual
		u.era.ProbeCost = time.Since(began)
		u.reset()
		if c, err = u.spawnChild(opts); err != nil {
			return err
		}
		if late.result != nil {
			c.replay.Store(&late.result)
		}
		c.meta.Store(&u.reqMeta)
		if err := u.connectChild(ctx, c, opts, ModernVersion); err != nil {
			return err
		}
		opts.Eras.putVerdict(key, true, late.dual)
		return nil
	}
	if err != nil {
		if errors.Is(w.err, errProbeTimeout) {
			err = fmt.Errorf("%w (it did not answer server/discover within probe_timeout %v either: if it speaks only %s and starts slowly, raise probe_timeout or set protocol = %q)",
				err, probeTimeout, ModernVersion, ProtocolModern)
		}
		return err
	}
	opts.Eras.put(key, false)
	return nil
}

// initializeFirst starts c, a server of unknown era, for a client of the
// initialize era (Options.PreferLegacy) with an initialize sent on the raw
// path instead of the server/discover probe: a server of that era, or of
// both, is initialized on this process at once, and the SDK's own initialize
// is answered with the result (replayInit), so that the server sees one
// initialize. A server of both eras must get it first: the go-sdk server
// takes a server/discover as its session's handshake and then refuses
// initialize as a duplicate, which cost a second process. It reports done
// with the start's outcome, or not done, with what the server answered, if
// it refused the initialize (a server of 2026-07-28 only): startChild then
// probes the same process. A go-sdk server narrowed to 2026-07-28 does not
// refuse (it answers 2025-11-25, as its handshake never rejects) and is
// served in the initialize era, which it then speaks.
func (u *Upstream) initializeFirst(ctx context.Context, c *child, opts Options, key string) (done bool, refused string, err error) {
	startCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := c.startDeadline(opts.StartupTimeout, cancel)
	c.probing.Store(true) // the SDK does not read yet
	result, err := c.initialize(startCtx, initializeParams(opts, protocolVersion))
	stop()
	var we *jsonrpc.Error
	switch {
	case errors.As(err, &we):
		what := fmt.Sprintf("error %d (%s)", we.Code, clean(we.Message, 200))
		u.log.Debug("server refused initialize; probing it with server/discover on the same process", "answer", what)
		return false, what, nil
	case err != nil:
		c.abort()
		return true, "", u.startError(ctx, startCtx, c, opts, err)
	}
	u.era.Probe = "initialize answered (sent first: the client speaks the initialize era)"
	c.probing.Store(false)
	c.replayInit.Store(&result)
	if err := u.connectChild(ctx, c, opts, protocolVersion); err != nil {
		return true, "", err
	}
	opts.Eras.putInit(key)
	return true, "", nil
}

// initializeParams returns the params of the initialize that the SDK client
// for opts sends at version (initialize era): mcp.Client's own computation,
// which is not exported (TestInitializeParamsAsSDK holds them equal).
func initializeParams(opts Options, version string) []byte {
	info := opts.ClientInfo
	if info == nil {
		info = &mcp.Implementation{Name: "manifold"}
	}
	m, err := wireCaps(opts, version)
	var b []byte
	if err == nil {
		b, err = json.Marshal(struct {
			ProtocolVersion string                     `json:"protocolVersion"`
			Capabilities    map[string]json.RawMessage `json:"capabilities"`
			ClientInfo      *mcp.Implementation        `json:"clientInfo"`
		}{version, m, info})
	}
	if err != nil {
		return []byte(`{"protocolVersion":"` + version + `","capabilities":{},"clientInfo":{"name":"manifold","version":""}}`)
	}
	return b
}

// refusedVersion reports whether err carries a -32022 answer: the server
// does not speak the version asked.
func refusedVersion(err error) bool {
	var we *jsonrpc.Error
	return errors.As(err, &we) && we.Code == mcp.CodeUnsupportedProtocolVersion
}

// lateModern reports whether late holds an answer to server/discover that
// lists 2026-07-28.
func lateModern(late <-chan reply) (probeOutcome, bool) {
	if late == nil {
		return probeOutcome{}, false
	}
	select {
	case r := <-late:
		o := classify(r.result, r.err, 0)
		return o, o.verdict == verdictModern
	default:
		return probeOutcome{}, false
	}
}

// supportedOf formats the versions a -32022 error says the server supports.
func supportedOf(we *jsonrpc.Error) string {
	if we == nil || len(we.Data) == 0 {
		return ""
	}
	var d mcp.UnsupportedProtocolVersionData
	if json.Unmarshal(we.Data, &d) != nil || len(d.Supported) == 0 {
		return ""
	}
	return "; it supports " + clean(strings.Join(d.Supported, ", "), 200)
}
