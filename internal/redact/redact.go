// Package redact hides secrets in what manifold shows: command output, the
// serve log, the audit log, status reports and error messages.
//
// A [Redactor] knows two kinds of secret. Known values are the config's own:
// every value a ${VAR} expansion produced, URL userinfo and query values,
// the values of credential headers and env variables, the value after a
// credential flag in args (the config loader finds them; see [URLSecrets],
// [PairSecrets], [ArgSecrets]). Each is hidden in every spelling it may take
// in output: as is, percent-encoded, JSON- or Go-quoted. Shapes are what
// looks like a credential wherever it comes from: URL userinfo and query
// values, "Bearer …" and "Basic …", credential key=value pairs, and known
// token formats (sk-…, ghp_…, github_pat_…, xox…-, glpat-…, AKIA…, JWTs).
// Both are replaced by [Mask]. [Args] redacts tool arguments for the audit
// log by key name and value shape.
//
// The package only rewrites text: it decides nothing, does no I/O of its own
// and imports the standard library only, so that every other package may use
// it (internal/archtest enforces this).
package redact

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf16"
	"unicode/utf8"
)

// Mask replaces every secret.
const Mask = "[redacted]"

// MinLen is the length under which a value is not recorded as a known
// secret: shorter values are not credentials worth the name, and hiding them
// would mask unrelated text ("true", a port number).
const MinLen = 6

// Redactor replaces known secrets and credential shapes with [Mask]. The
// zero value and a nil *Redactor know no values and hide shapes only. It is
// safe for concurrent use; [Redactor.Add] may be called while it is in use
// (a reloaded config brings new secrets).
type Redactor struct {
	mu    sync.Mutex      // serialises Add
	known map[string]bool // guarded by mu: the secrets as given
	snap  atomic.Pointer[snapshot]
}

// snapshot is what a Redactor knows at one time; it is never changed once
// stored, so that readers need no lock.
type snapshot struct {
	repl *strings.Replacer // every form of every known secret → Mask
	wire *strings.Replacer // every wire spelling of every known secret → Mask
	// needles are the wire spellings to look for in raw bytes, none of
	// which contains another (finding the longer means finding the shorter),
	// by their first two bytes; pairs has the bit of each such pair set.
	needles map[uint16][][]byte
	pairs   *[1 << 16 / 64]uint64
}

// New returns a Redactor that knows secrets (see [Redactor.Add]).
func New(secrets ...string) *Redactor {
	r := &Redactor{}
	r.Add(secrets...)
	return r
}

// Add records secrets as known. Values shorter than [MinLen] are ignored.
func (r *Redactor) Add(secrets ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	changed := false
	for _, s := range secrets {
		if len(s) < MinLen || r.known[s] {
			continue
		}
		if r.known == nil {
			r.known = make(map[string]bool)
		}
		r.known[s] = true
		changed = true
	}
	if !changed {
		return
	}
	forms := make(map[string]bool)
	wire := make(map[string]bool)
	for s := range r.known {
		for _, f := range Forms(s) {
			forms[f] = true
			for _, w := range wireForms(f) {
				wire[w] = true
			}
		}
	}
	sn := &snapshot{repl: replacer(forms), wire: replacer(wire), needles: make(map[uint16][][]byte), pairs: new([1 << 16 / 64]uint64)}
	for _, n := range needles(wire) {
		p := pair(n[0], n[1])
		sn.needles[p] = append(sn.needles[p], n)
		sn.pairs[p/64] |= 1 << (p % 64)
	}
	r.snap.Store(sn)
}

func pair(a, b byte) uint16 { return uint16(a)<<8 | uint16(b) }

// replacer replaces every one of forms with Mask. strings.Replacer tries its
// old strings in argument order at each position: longest first, so that a
// secret containing another is hidden whole.
func replacer(forms map[string]bool) *strings.Replacer {
	list := slices.SortedFunc(maps.Keys(forms), longestFirst)
	pairs := make([]string, 0, 2*len(list))
	for _, f := range list {
		pairs = append(pairs, f, Mask)
	}
	return strings.NewReplacer(pairs...)
}

func longestFirst(a, b string) int {
	if len(a) != len(b) {
		return len(b) - len(a)
	}
	return strings.Compare(a, b)
}

// needles returns the spellings that are enough to find any of forms: those
// that contain none of the others.
func needles(forms map[string]bool) [][]byte {
	list := slices.SortedFunc(maps.Keys(forms), func(a, b string) int { return -longestFirst(a, b) })
	var out [][]byte
	for _, f := range list {
		if !slices.ContainsFunc(out, func(n []byte) bool { return strings.Contains(f, string(n)) }) {
			out = append(out, []byte(f))
		}
	}
	return out
}

// wireForms returns f and the spellings JSON encoders other than Go's give
// it: "/" escaped as "\/" (PHP), and every character beyond ASCII as \uXXXX
// (Python's default).
func wireForms(f string) []string {
	out := []string{f}
	if strings.Contains(f, "/") {
		out = append(out, strings.ReplaceAll(f, "/", `\/`))
	}
	if ascii := asciiEscape(f); ascii != f {
		out = append(out, ascii)
	}
	return out
}

// asciiEscape returns s with every rune beyond ASCII written as a JSON
// \uXXXX escape (a surrogate pair beyond the Basic Multilingual Plane).
func asciiEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r < utf8.RuneSelf:
			b.WriteRune(r)
		case r > 0xFFFF:
			r1, r2 := utf16.EncodeRune(r)
			fmt.Fprintf(&b, `\u%04x\u%04x`, r1, r2)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
	}
	return b.String()
}

func (r *Redactor) snapshot() *snapshot {
	if r == nil {
		return nil
	}
	return r.snap.Load()
}

// String returns s with every known secret and every credential shape
// replaced by [Mask].
func (r *Redactor) String(s string) string {
	return Shapes(r.Known(s))
}

// Known returns s with every known secret, in each of its [Forms], replaced
// by [Mask]; credential shapes are kept. It is for text that Manifold passes
// on rather than shows (what an upstream returns), where a shape may be the
// content itself but a secret of the config must not get through.
func (r *Redactor) Known(s string) string {
	if sn := r.snapshot(); sn != nil {
		return sn.repl.Replace(s)
	}
	return s
}

// Knows reports whether r knows any secret.
func (r *Redactor) Knows() bool { return r.snapshot() != nil }

// Contains reports whether b holds a known secret in any spelling that
// output or a JSON encoder may give it. It allocates nothing and reads b
// once, whatever the number of secrets: a bit per pair of bytes says
// whether a secret's spelling may start there, and only then is it compared.
func (r *Redactor) Contains(b []byte) bool {
	sn := r.snapshot()
	return sn != nil && sn.contains(b)
}

func (sn *snapshot) contains(b []byte) bool {
	for i := 0; i+1 < len(b); i++ {
		p := pair(b[i], b[i+1])
		if sn.pairs[p/64]&(1<<(p%64)) == 0 {
			continue
		}
		for _, n := range sn.needles[p] {
			if bytes.HasPrefix(b[i:], n) {
				return true
			}
		}
	}
	return false
}

// Error returns err with its message redacted, or nil when err is nil. The
// result unwraps to err, so errors.Is and errors.As see through it.
func (r *Redactor) Error(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if red := r.String(msg); red != msg {
		return &redactedError{msg: red, err: err}
	}
	return err
}

// KnownError is [Redactor.Error] with known secrets hidden and credential
// shapes kept, as [Redactor.Known] hides them.
func (r *Redactor) KnownError(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if red := r.Known(msg); red != msg {
		return &redactedError{msg: red, err: err}
	}
	return err
}

type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// Writer returns a writer that redacts each Write's bytes on their own and
// passes them to w. A secret split across two writes is not seen: write
// whole lines (log/slog handlers and fmt.Fprint* calls do).
func (r *Redactor) Writer(w io.Writer) io.Writer {
	return &writer{r: r, w: w}
}

type writer struct {
	r *Redactor
	w io.Writer
}

func (w *writer) Write(p []byte) (int, error) {
	s := string(p)
	red := w.r.String(s)
	if red == s {
		return w.w.Write(p)
	}
	if _, err := io.WriteString(w.w, red); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Forms returns the spellings of secret that output may contain: as is,
// percent-encoded (query, path, fragment and userinfo escaping), and each of
// those JSON-escaped (with and without HTML escaping) or Go-quoted (%q,
// slog's text handler), up to [quoteDepth] times over (a quoted stderr line
// inside a quoted error inside a log line).
func Forms(secret string) []string {
	bases := []string{secret, url.QueryEscape(secret), url.PathEscape(secret), url.User(secret).String(),
		strings.TrimPrefix(url.UserPassword("", secret).String(), ":"),
		(&url.URL{Path: secret}).EscapedPath(), (&url.URL{Fragment: secret}).EscapedFragment()}
	var out []string
	seen := make(map[string]bool)
	level := bases
	for range quoteDepth + 1 {
		var next []string
		for _, f := range level {
			if f == "" || seen[f] {
				continue
			}
			seen[f] = true
			out = append(out, f)
			next = append(next, jsonEscape(f, true), jsonEscape(f, false), goQuote(f))
		}
		level = next
	}
	return out
}

// quoteDepth is how many times a secret may be quoted in output: an
// upstream's stderr line quotes its args (1), the start error quotes the
// line (2), the log's text handler quotes the error (3), and a JSON report
// of the log line quotes it again (4).
const quoteDepth = 4

// jsonEscape returns s as inside a JSON string.
func jsonEscape(s string, html bool) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(html)
	_ = enc.Encode(s)
	out := strings.TrimSuffix(b.String(), "\n")
	return out[1 : len(out)-1]
}

// goQuote returns s as inside a Go-quoted string.
func goQuote(s string) string {
	q := strconv.Quote(s)
	return q[1 : len(q)-1]
}

// Shapes returns s with every credential shape replaced by [Mask]: URL
// userinfo and query values, the credential after "Bearer" or "Basic",
// values of credential keys in key=value, "key: value" and JSON pairs, and
// known token formats.
func Shapes(s string) string {
	return shapes(s, shapeStages(s))
}

// The stages of [Shapes], as bits: each runs one expression over the text.
const (
	stageURL = 1 << iota
	stageScheme
	stageToken
	stagePEM
	stagePair
	stagesAll = stageURL | stageScheme | stageToken | stagePEM | stagePair
)

// shapes runs the stages of Shapes in stages, in order.
func shapes(s string, stages int) string {
	if stages == 0 {
		return s
	}
	p := patterns()
	if stages&stageURL != 0 {
		s = p.urlRE.ReplaceAllStringFunc(s, redactURLText)
	}
	if stages&stageScheme != 0 {
		s = p.schemeRE.ReplaceAllString(s, "${1}"+Mask)
	}
	if stages&stageToken != 0 {
		s = p.tokenRE.ReplaceAllString(s, Mask)
	}
	if stages&stagePEM != 0 {
		s = p.pemRE.ReplaceAllString(s, "${1}"+Mask+"${2}")
	}
	if stages&stagePair != 0 {
		s = p.pairRE.ReplaceAllStringFunc(s, redactPair)
	}
	return s
}

// shapeStages returns the stages of Shapes that may change s: each
// expression needs a literal that s lacks in most lines of a log (a line
// costs ~40 µs through all five, ~1 µs through this check). A stage is
// skipped only when s lacks its literal, and no stage writes one (each
// writes Mask, whose brackets no literal can span), so the result is the
// same as with every stage run.
func shapeStages(s string) int {
	var buf [512]byte
	low := buf[:0]
	if len(s) > len(buf) {
		low = make([]byte, 0, len(s))
	}
	ascii := true
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x80 {
			ascii = false
		} else if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		low = append(low, c)
	}
	var stages int
	if strings.Contains(s, "://") {
		stages |= stageURL
	}
	// The scheme's expression ignores case as Unicode folds it ("ſ" is
	// an "s"): with any other byte than ASCII it runs.
	if !ascii || bytes.Contains(low, []byte("bearer")) || bytes.Contains(low, []byte("basic")) {
		stages |= stageScheme
	}
	for _, t := range tokenPrefixes {
		if strings.Contains(s, t) {
			stages |= stageToken
			break
		}
	}
	if strings.Contains(s, "PRIVATE KEY-----") {
		stages |= stagePEM
	}
	// A pair's key is ASCII ([A-Za-z][A-Za-z0-9_.-]*) and a credential's
	// only when one of its words holds one of keyNeedles.
	for _, n := range keyNeedles() {
		if bytes.Contains(low, n) {
			stages |= stagePair
			break
		}
	}
	return stages
}

// tokenPrefixes are literals that each of tokenRE's formats starts with
// (tokenRE is case-sensitive).
var tokenPrefixes = []string{"sk-", "gh", "github_pat_", "xox", "glpat-", "AKIA", "AIza", "npm_", "eyJ"}

// keyNeedles are the lowercase literals of which a credential's key holds
// one ([SecretKey]): its substrings, its words and "key", without those that
// hold another (not "apikey": "key" is enough).
var keyNeedles = sync.OnceValue(func() [][]byte {
	all := append(append(slices.Clone(secretSubstrings), secretWords...), "key")
	var out [][]byte
	for _, n := range all {
		if !slices.ContainsFunc(all, func(m string) bool { return m != n && strings.Contains(n, m) }) {
			out = append(out, []byte(n))
		}
	}
	return out
})

// patterns are the expressions of Shapes, compiled on first use: most
// processes of the binary (the reaper, most commands) never redact text.
var patterns = sync.OnceValue(func() *textPatterns {
	return &textPatterns{
		// urlRE matches a URL in text; it stops at quotes, backslashes (an
		// escaped quote) and white space.
		urlRE: regexp.MustCompile(`(?i)\b[a-z][a-z0-9+.-]*://[^\s"'<>\\` + "`" + `]+`),
		// userinfoRE is the userinfo of a matched URL.
		userinfoRE: regexp.MustCompile(`^([A-Za-z][A-Za-z0-9+.-]*://)[^/?#@]+@`),
		// queryValueRE is one query value of a matched URL's query.
		queryValueRE: regexp.MustCompile(`([?&;][^=&#;]*=)[^&#;]+`),
		// schemeRE is an HTTP credential after its auth scheme.
		schemeRE: regexp.MustCompile(`(?i)\b((?:bearer|basic)\s+)[A-Za-z0-9._~+/=-]{6,}`),
		// pemRE is the body of a PEM private key block ("-----BEGIN RSA PRIVATE
		// KEY-----"…), complete or cut short (then up to the end of s).
		pemRE: regexp.MustCompile(`(-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----)(?s:.*?)(-----END [A-Z0-9 ]*PRIVATE KEY-----|$)`),
		// tokenRE is a token of a well-known format.
		tokenRE: regexp.MustCompile(`\b(?:` + strings.Join([]string{
			`sk-[A-Za-z0-9_-]{16,}`,                    // OpenAI, Anthropic
			`(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,}`, // GitHub
			`github_pat_[A-Za-z0-9_]{20,}`,
			`xox[abposre]-[A-Za-z0-9-]{10,}`,                          // Slack
			`glpat-[A-Za-z0-9_-]{20,}`,                                // GitLab
			`AKIA[0-9A-Z]{16}`,                                        // AWS access key id
			`AIza[0-9A-Za-z_-]{35}`,                                   // Google API key
			`npm_[A-Za-z0-9]{36}`,                                     // npm
			`eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*`, // JWT
		}, "|") + `)`),
		// pairRE is key=value, key: value or "key":"value" (also with escaped
		// quotes); redactPair decides whether the key is a credential's. A value
		// does not start with '-' (${VAR:-default} is not a pair).
		pairRE: regexp.MustCompile(`([A-Za-z][A-Za-z0-9_.-]*)(=|:[ \t]*|\\?"[ \t]*:[ \t]*\\?")([^\s"'&,;\\-][^\s"'&,;\\]*)`),
	}
})

type textPatterns struct {
	urlRE        *regexp.Regexp
	userinfoRE   *regexp.Regexp
	queryValueRE *regexp.Regexp
	schemeRE     *regexp.Regexp
	pemRE        *regexp.Regexp
	tokenRE      *regexp.Regexp
	pairRE       *regexp.Regexp
}

func redactURLText(u string) string {
	p := patterns()
	u = p.userinfoRE.ReplaceAllString(u, "${1}"+Mask+"@")
	if i := strings.IndexByte(u, '?'); i >= 0 {
		u = u[:i] + p.queryValueRE.ReplaceAllString(u[i:], "${1}"+Mask)
	}
	return u
}

func redactPair(m string) string {
	sub := patterns().pairRE.FindStringSubmatch(m)
	key, sep, value := sub[1], sub[2], sub[3]
	if !textKey(key) || value == Mask || strings.EqualFold(value, "bearer") || strings.EqualFold(value, "basic") || keyPathProse(key, sep, value) {
		return m
	}
	return key + sep + Mask
}

// keyPathProse reports whether key, sep and value are a dotted key path
// followed by ": " and a word of lowercase letters: how Manifold's own
// messages name a config key ("servers.github.env.GITHUB_TOKEN: environment
// variable GITHUB_TOKEN is not set", "servers.x.headers.Authorization:
// expected a string"), not a credential. A credential's value of lowercase
// letters only, after a dotted key and ": ", is the one shape this lets
// through; the config's own secrets are hidden by value whatever their shape.
func keyPathProse(key, sep, value string) bool {
	if !strings.Contains(key, ".") || !strings.HasPrefix(sep, ":") || len(sep) < 2 {
		return false
	}
	for i := 0; i < len(value); i++ {
		if value[i] < 'a' || value[i] > 'z' {
			return false
		}
	}
	return true
}

// textKey is [SecretKey] for keys seen in free text, where "session"
// names the proxy's own client sessions, shown in its logs, not a secret of
// the config.
func textKey(k string) bool {
	if !SecretKey(k) {
		return false
	}
	for _, t := range keyTokens(k) {
		if !strings.Contains(t, "session") && secretToken(t) {
			return true
		}
	}
	return false
}

// URL returns raw with its userinfo and every query value replaced by
// [Mask], as the URL of a remote server is shown.
func URL(raw string) string {
	return redactURLText(raw)
}

// URLSecrets returns the parts of the URL raw that are secrets: its
// userinfo's user and password and its query values, decoded. It returns
// nil for text that does not parse as a URL.
func URLSecrets(raw string) []string {
	u, err := url.Parse(raw)
	if err != nil {
		return nil
	}
	var out []string
	if u.User != nil {
		out = append(out, u.User.Username())
		if p, ok := u.User.Password(); ok {
			out = append(out, p)
		}
	}
	for _, vs := range u.Query() {
		out = append(out, vs...)
	}
	return out
}

// PairSecrets returns the secrets of a header or env variable named key
// with value: the whole value (and the credential after an auth scheme)
// when key names a credential ([SecretKey]), and the [URLSecrets] of a value
// that is a URL.
func PairSecrets(key, value string) []string {
	var out []string
	if SecretKey(key) {
		out = append(out, value)
		if _, cred, ok := strings.Cut(strings.TrimSpace(value), " "); ok {
			out = append(out, strings.TrimSpace(cred))
		}
	}
	if strings.Contains(value, "://") {
		out = append(out, URLSecrets(value)...)
	}
	return out
}

// ArgSecrets returns the secrets in a command line: the value of a
// credential flag ("--token X", "--api-key=X", "-password X"), and the
// [URLSecrets] of arguments that are URLs.
func ArgSecrets(args []string) []string {
	var out []string
	for i, a := range args {
		if strings.Contains(a, "://") {
			out = append(out, URLSecrets(a)...)
		}
		if !strings.HasPrefix(a, "-") {
			continue
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !SecretKey(name) {
			continue
		}
		if hasValue {
			out = append(out, value)
		} else if i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
			out = append(out, args[i+1])
		}
	}
	return out
}
