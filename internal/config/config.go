// Package config loads and validates manifold's configuration file, proxy.toml.
//
// It turns the file into plain Go values with every default applied, every
// relative path resolved and every ${VAR} expanded, and it reports every
// problem at once, each one starting with FILE:LINE:COL:, naming the key and
// saying what to do. Decoding is strict: an unknown key, or a known key
// written in another case, is an error with a did-you-mean.
//
// The package only reads: it does not start anything, does not log and keeps
// no global state. It imports the standard library, the TOML decoder and
// package policy (whose values it builds) only; cmd/manifold maps a [Config]
// to the options of the packages that act on it.
package config

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/manifold-mcp/manifold/internal/configpath"
	"github.com/manifold-mcp/manifold/policy"
)

// Defaults applied when a key is absent.
const (
	DefaultStartupTimeout   = 30 * time.Second
	DefaultCallTimeout      = 60 * time.Second
	DefaultFirstListTimeout = 10 * time.Second
	DefaultFirstListWait    = 0 // by client (proxy.Options.FirstListWait)
	// DefaultMaxNameLength is 64 - len("mcp__manifold__"): Claude Code's
	// name for a tool of the entry "manifold" then fits the model API's 64.
	DefaultMaxNameLength = 49
	// MaxDescriptionLength bounds a server's description, in characters:
	// it is one line of Manifold's instructions, which must stay under the
	// 2 KB that clients keep.
	MaxDescriptionLength = 300
	// MinMaxNameLength and MaxMaxNameLength bound max_name_length.
	MinMaxNameLength       = 16
	MaxMaxNameLength       = 64
	DefaultMaxMessageBytes = 64 << 20
	DefaultLogLevel        = "info"
	DefaultListen          = "127.0.0.1:7777"

	// Defaults of the [http] limits.
	DefaultHTTPMaxBodyBytes       = 4 << 20
	DefaultHTTPHeaderTimeout      = 10 * time.Second
	DefaultHTTPBodyTimeout        = 30 * time.Second
	DefaultHTTPMaxSessions        = 100
	DefaultHTTPSessionIdleTimeout = 10 * time.Minute
	// DefaultHTTPDrainGrace leaves the upstreams' stop sequence room in
	// Kubernetes' default terminationGracePeriodSeconds (30s).
	DefaultHTTPDrainGrace = 20 * time.Second
	// DefaultHTTPMaxEventBytes bounds the events kept for resuming streams.
	DefaultHTTPMaxEventBytes = 10 << 20

	// MinHTTPMaxEventBytes and MaxHTTPMaxEventBytes bound
	// http.max_event_bytes.
	MinHTTPMaxEventBytes = 64 << 10
	MaxHTTPMaxEventBytes = 1 << 30

	// MinHTTPMaxBodyBytes is the smallest http.max_body_bytes accepted.
	MinHTTPMaxBodyBytes = 4 << 10

	// MinMaxMessageBytes is the smallest max_message_bytes accepted.
	MinMaxMessageBytes = 1 << 20
)

// Transports of a remote server.
const (
	TransportStreamable = "streamable"
	TransportSSE        = "sse"
)

// ErrNoConfig is returned (wrapped) by [Load] when the file does not exist.
var ErrNoConfig = errors.New("no config file")

// Config is a loaded, validated proxy.toml.
type Config struct {
	// Path is the absolute path of the file; Dir is its folder, against which
	// relative paths in the file were resolved: for a file named by a file
	// descriptor (--config <(…), /dev/stdin), which has no folder of its
	// own, the working directory (baseDir).
	Path string
	Dir  string

	// StartupTimeout and CallTimeout are the global defaults, already applied
	// to every [Server]. FirstListWait bounds how long a list waits for
	// upstreams still starting (then it holds those that are up);
	// FirstListTimeout bounds how long a call, prompt get or read of a name
	// not yet known waits for them.
	StartupTimeout   time.Duration
	CallTimeout      time.Duration
	FirstListWait    time.Duration
	FirstListTimeout time.Duration

	// MaxMessageBytes is the global limit on one JSON-RPC message, already
	// applied to every [Server].
	MaxMessageBytes int

	// MaxNameLength is the longest exposed tool or prompt name
	// (max_name_length).
	MaxNameLength int

	// LogLevel is "debug", "info", "warn" or "error".
	LogLevel string

	HTTP HTTP

	// Auth is the [auth] table: authentication of HTTP clients.
	Auth Auth

	// Telemetry is the [telemetry] table (metrics) and log_format.
	Telemetry Telemetry

	// Cluster is the [cluster] table: the state replicas share on Redis.
	Cluster Cluster
	// Tokens is the [tokens] table: the store of the OAuth credentials of
	// servers with auth = "oauth".
	Tokens Tokens

	// Policy is the top-level read_only and the servers' policy keys
	// (allow/deny lists, read_only, annotations, overrides) and, once [Load]
	// has read them, the policy files' rules. It is nil when the file sets
	// none of them and lists no policy files; a nil *policy.Rules allows
	// everything.
	Policy *policy.Rules
	// PolicyFiles are the policy_files paths and globs, made absolute
	// against Dir; [LoadPolicyFiles] reads them.
	PolicyFiles []string

	Audit Audit

	// ConfirmTTL is how long a person has to answer a request of approval
	// of a call, and how long an approval given with `manifold approve-call`
	// waits for the retry (confirm_ttl). If zero, DefaultConfirmTTL.
	ConfirmTTL time.Duration

	// Protocol is the [protocol] table (bridging the protocol eras).
	Protocol Protocol

	// Catalog is the [catalog] table: which tool list each client gets.
	Catalog Catalog

	// Pin is the top-level pin mode (PinQuarantine, PinWarn or PinOff;
	// DefaultPin when absent), each server's default. LockFile is the
	// absolute path of the lock file of approved definitions (lock_file,
	// relative to Dir; DefaultLockFile beside the config when absent).
	Pin      string
	LockFile string

	// ReadOnce is set by Load when the config is not a regular file (a
	// pipe such as --config <(…), /dev/stdin): it cannot be read again,
	// so it cannot be reloaded, and its "folder" (/dev/fd) holds no lock
	// file: LockFile is then "" (none) unless lock_file names another.
	ReadOnce bool

	// Servers are the enabled servers in document order; servers with
	// disabled = true are left out.
	Servers []Server

	// LeftOut are the enabled servers that cannot start as configured, in
	// document order: their env, headers or args name an environment
	// variable that is not set (and has no default). They are not in
	// Servers: one server's missing secret leaves that server out, and the
	// others serve. A required server's unset variable is an error instead.
	LeftOut []LeftOut

	// Plugins are the enabled plugins in document order; plugins with
	// disabled = true are left out.
	Plugins []Plugin

	// Secrets are the values that must never be shown, sorted: the value of
	// every ${VAR} expansion (except file paths, such as ${HOME}), of every
	// ${env:NAME} and ${file:PATH} reference, and the
	// literal userinfo and query values of URLs, values of credential headers
	// and env variables, and values of credential flags in args (see package
	// internal/redact). Values shorter than redact.MinLen are left out. Show
	// config values through a redact.Redactor that knows them; [Load]'s and
	// [Parse]'s errors already hide them.
	Secrets []string

	// SecretFiles are the files that ${file:PATH} references read, in the
	// order first read. A reload rereads them; watch them as the config.
	SecretFiles []SecretFile
}

// LeftOut is a server left out of Config.Servers: Err says why, with
// where in the file and what to do (it names variables, never values).
type LeftOut struct {
	Name string
	Err  string
}

// HTTP configures the streamable HTTP listener.
type HTTP struct {
	// Listen is the host:port to listen on.
	Listen string
	// AllowedHosts are Host header values accepted besides localhost,
	// 127.0.0.1 and [::1].
	AllowedHosts []string
	// AllowedOrigins are Origin header values accepted, as scheme://host[:port].
	AllowedOrigins []string

	// MaxBodyBytes bounds one request body (http.max_body_bytes).
	MaxBodyBytes int64
	// HeaderTimeout bounds reading a request's headers (http.header_timeout);
	// BodyTimeout bounds reading its body (http.body_timeout). Neither bounds
	// the response, so SSE streams and long calls are not cut.
	HeaderTimeout time.Duration
	BodyTimeout   time.Duration
	// MaxSessions caps the MCP sessions open at once (http.max_sessions).
	MaxSessions int
	// SessionIdleTimeout closes a session without any request open or call
	// in flight for that long (http.session_idle_timeout).
	SessionIdleTimeout time.Duration
	// DrainGrace bounds how long serve --http waits, after SIGTERM, for the
	// requests in flight before it stops (http.drain_grace).
	DrainGrace time.Duration
	// MaxEventBytes bounds what the initialize era's streams keep so that a
	// client can resume one that dropped, all sessions together
	// (http.max_event_bytes).
	MaxEventBytes int64
}

// Server is one upstream MCP server: a local process (Command set) or a
// remote one (URL set), never both.
type Server struct {
	// Name is the key in [servers.NAME].
	Name string

	// Command is a bare name looked up in PATH later, or an absolute path
	// (relative paths with a separator are resolved against Config.Dir).
	Command string
	Args    []string
	Env     map[string]string
	// Cwd is absolute for a stdio server (Config.Dir when absent in the
	// file) and empty for a remote one.
	Cwd string

	URL     string
	Headers map[string]string
	// Transport is TransportStreamable or TransportSSE for a remote server,
	// empty for a stdio one.
	Transport string

	// Prefix namespaces the server's tools and prompts; it is Name when
	// absent in the file, and "" exposes names unchanged.
	Prefix string

	StartupTimeout time.Duration
	CallTimeout    time.Duration
	Required       bool
	// Description says in a sentence what the server is for (description);
	// Manifold's instructions summary and the search surface use it before
	// the server's own instructions. At most MaxDescriptionLength characters;
	// empty when absent.
	Description string
	// Instructions merges the server's initialize instructions into the
	// proxy's (opt-in: they reach the model's system prompt).
	Instructions    bool
	MaxMessageBytes int
	// PerSession gives each HTTP client session its own process
	// (isolation = "session").
	PerSession bool
	// AllowUnsolicitedSampling and AllowUnsolicitedElicitation let the server
	// send sampling/createMessage and elicitation/create outside any call of
	// its client (allow_unsolicited = ["sampling", "elicitation"]).
	AllowUnsolicitedSampling    bool
	AllowUnsolicitedElicitation bool
	// Lazy starts the server on its first call (start = "lazy").
	Lazy bool
	// IdleTimeout stops the server after that long without a call; 0: never.
	IdleTimeout time.Duration
	// Health is the server's health check; nil for none.
	Health *Health
	// Restart says how the server is restarted when it exits.
	Restart Restart
	// Protocol pins the protocol era: ProtocolModern ("2026-07-28") or
	// ProtocolLegacy (the initialize era, no probe); empty for auto (probe
	// server/discover; also what protocol = "auto" gives).
	Protocol string
	// ProbeTimeout bounds the server/discover probe; 0: the default
	// (upstream.DefaultProbeTimeout).
	ProbeTimeout time.Duration
	// OAuth is set for auth = "oauth": Manifold is the server's OAuth 2.1
	// client; nil otherwise.
	OAuth *OAuthClient
	// PerIdentity makes each caller's calls carry that caller's own
	// credential: for a remote server, its own OAuth token (credentials =
	// "identity"); for a stdio one, a process of its own started with its
	// entry of Identities (isolation = "identity"). The catalog and health
	// checks use the shared connection: the service credential, or none.
	PerIdentity bool
	// Identities are the environments of the identities of a stdio server
	// with isolation = "identity" ([servers.NAME.identities."user:SUBJECT"]
	// env = {...}), added to Env; a caller without an entry is refused.
	Identities map[string]map[string]string
	// Pin is the server's pin mode (PinQuarantine, PinWarn or PinOff): its
	// own pin key, else the top-level one.
	Pin string
}

// Values of Server.Protocol.
const (
	ProtocolAuto   = "auto"
	ProtocolModern = "2026-07-28"
	ProtocolLegacy = "legacy"
)

// Path is the config file a command uses: flag (the --config flag or the
// file argument) if set, else $MANIFOLD_CONFIG, else ./proxy.toml if it
// exists, else proxy.toml in the user's config folder
// ($XDG_CONFIG_HOME/manifold) if it exists, else ./proxy.toml
// (configpath.Find).
func Path(flag string) string { return configpath.Find(flag) }

// EnvList is the server's env table as the KEY=VALUE list its process gets
// after the proxy's own environment, sorted by key.
func (s Server) EnvList() []string {
	var env []string
	for _, k := range slices.Sorted(maps.Keys(s.Env)) {
		env = append(env, k+"="+s.Env[k])
	}
	return env
}

// Load reads and parses the file at path; see [Parse]. It then reads the
// policy files that the file lists ([LoadPolicyFiles]) into Config.Policy.
// When the file does not exist the error wraps [ErrNoConfig].
func Load(path string) (*Config, error) { return load(path, nil) }

// Check is [Load] that also reports, among the other problems, every server
// or plugin command that cannot be run: a bare name that lookPath (such as
// exec.LookPath) does not find, or a path that is not an executable file.
// Load leaves that to the start of each server, so that one missing program
// does not keep the others from serving; `manifold check` wants to know.
func Check(path string, lookPath func(string) (string, error)) (*Config, error) {
	return load(path, lookPath)
}

func load(path string, lookPath func(string) (string, error)) (*Config, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: not found; create it or pass the path of an existing file: %w", path, ErrNoConfig)
	}
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, fmt.Errorf("%s: cannot read config: %w", path, err)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("%s: resolve path: %w", path, err)
	}
	cfg, err := decode(path, abs, data, os.LookupEnv, lookPath)
	if err != nil {
		return nil, err
	}
	if st, err := os.Stat(path); err == nil && !st.Mode().IsRegular() {
		cfg.ReadOnce = true
		if cfg.LockFile == resolve(cfg.Dir, DefaultLockFile) {
			cfg.LockFile = "" // the default, in /dev/fd or the like
		}
	}
	if cfg.Policy, err = LoadPolicyFiles(cfg); err != nil {
		return nil, err
	}
	if cfg.Auth.APIKeysFile != "" {
		if cfg.Auth.APIKeys, err = LoadAPIKeys(cfg.Auth.APIKeysFile, os.LookupEnv); err != nil {
			return nil, err
		}
	}
	return cfg, nil
}

// Parse parses and validates data as the contents of the file at path,
// expanding ${VAR} from the process environment. path prefixes every error
// message as given, and its folder is the base of relative paths. It reads
// no other file but the ${file:} secrets (regular files only): the policy
// files are listed in Config.PolicyFiles, not read, nor is the API keys
// file (see [Load]).
//
// The error, when not nil, joins one error per problem in file order; each
// message starts with "path:line:col: " (or "path:line: ", or "path: " when
// the position is unknown).
func Parse(path string, data []byte) (*Config, error) {
	return ParseEnv(path, data, os.LookupEnv)
}

// ParseEnv is [Parse] with the environment read through lookup, which has
// the signature of os.LookupEnv.
func ParseEnv(path string, data []byte, lookup func(string) (string, bool)) (*Config, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("%s: resolve path: %w", path, err)
	}
	return decode(path, abs, data, lookup, nil)
}

// URIPrefix returns the resource URI prefix that goes with the tool prefix p:
// p lowercased, '_' replaced by '-', and "m" prepended unless it starts with
// a letter, so that it is a valid URI scheme. The empty prefix, which leaves
// URIs unchanged, maps to "".
func URIPrefix(p string) string {
	if p == "" {
		return ""
	}
	s := strings.ReplaceAll(strings.ToLower(p), "_", "-")
	if c := s[0]; c < 'a' || c > 'z' {
		s = "m" + s
	}
	return s
}
