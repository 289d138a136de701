package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// env returns a lookup function over m, for ParseEnv.
func env(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := m[k]
		return v, ok
	}
}

// problems splits the error returned by Parse into one message per problem.
func problems(t *testing.T, err error) []string {
	t.Helper()
	if err == nil {
		return nil
	}
	var joined interface{ Unwrap() []error }
	if !errors.As(err, &joined) {
		return []string{err.Error()}
	}
	var out []string
	for _, e := range joined.Unwrap() {
		out = append(out, e.Error())
	}
	return out
}

// defaults is a Config as Parse returns it for an empty /etc/manifold/proxy.toml.
func defaults() *Config {
	return &Config{
		Path:             "/etc/manifold/proxy.toml",
		Dir:              "/etc/manifold",
		StartupTimeout:   30 * time.Second,
		CallTimeout:      60 * time.Second,
		FirstListWait:    0,
		MaxNameLength:    49,
		FirstListTimeout: 10 * time.Second,
		MaxMessageBytes:  64 << 20,
		LogLevel:         "info",
		HTTP: HTTP{
			Listen:             "127.0.0.1:7777",
			MaxBodyBytes:       4 << 20,
			HeaderTimeout:      10 * time.Second,
			BodyTimeout:        30 * time.Second,
			MaxSessions:        100,
			SessionIdleTimeout: 10 * time.Minute,
			DrainGrace:         20 * time.Second,
			MaxEventBytes:      10 << 20,
		},
		Catalog:  Catalog{Mode: CatalogAuto, SearchAbove: DefaultSearchAbove},
		Pin:      PinQuarantine,
		LockFile: "/etc/manifold/manifold.lock",
	}
}

// stdio is a stdio Server with the defaults of a server named name in
// /etc/manifold/proxy.toml.
func stdio(name, command string) Server {
	return Server{
		Name:            name,
		Command:         command,
		Cwd:             "/etc/manifold",
		Prefix:          name,
		StartupTimeout:  30 * time.Second,
		CallTimeout:     60 * time.Second,
		MaxMessageBytes: 64 << 20,
		Pin:             PinQuarantine,
	}
}

func TestParse(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		env  map[string]string
		want func(c *Config)
	}{
		{
			name: "empty file gives defaults",
			doc:  "",
			want: func(c *Config) {},
		},
		{
			name: "version 1 and globals",
			doc: `version = 1
startup_timeout = "5s"
call_timeout = "2m"
first_list_timeout = "750ms"
first_list_wait = "1s"
max_name_length = 60
max_message_bytes = 1048576
log_level = "debug"

[http]
listen = "0.0.0.0:8080"
allowed_hosts = ["proxy.example.com"]
allowed_origins = ["https://app.example.com"]
max_body_bytes = 65536
header_timeout = "2s"
body_timeout = "5s"
max_sessions = 8
session_idle_timeout = "90s"
drain_grace = "45s"
max_event_bytes = 1048576
`,
			want: func(c *Config) {
				c.StartupTimeout = 5 * time.Second
				c.CallTimeout = 2 * time.Minute
				c.FirstListTimeout = 750 * time.Millisecond
				c.FirstListWait = time.Second
				c.MaxNameLength = 60
				c.MaxMessageBytes = 1 << 20
				c.LogLevel = "debug"
				c.HTTP = HTTP{
					Listen:             "0.0.0.0:8080",
					AllowedHosts:       []string{"proxy.example.com"},
					AllowedOrigins:     []string{"https://app.example.com"},
					MaxBodyBytes:       65536,
					HeaderTimeout:      2 * time.Second,
					BodyTimeout:        5 * time.Second,
					MaxSessions:        8,
					SessionIdleTimeout: 90 * time.Second,
					DrainGrace:         45 * time.Second,
					MaxEventBytes:      1 << 20,
				}
			},
		},
		{
			name: "stdio server gets global timeouts, its name as prefix and the config folder as cwd",
			doc: `call_timeout = "5s"
[servers.files]
command = "npx"
args = ["-y", "@modelcontextprotocol/server-filesystem", "."]
`,
			want: func(c *Config) {
				c.CallTimeout = 5 * time.Second
				s := stdio("files", "npx")
				s.Args = []string{"-y", "@modelcontextprotocol/server-filesystem", "."}
				s.CallTimeout = 5 * time.Second
				c.Servers = []Server{s}
			},
		},
		{
			name: "description is trimmed; 300 characters fit",
			doc: `[servers.a]
command = "/usr/bin/a"
description = "  Read and write the project's files.  "
[servers.b]
command = "/usr/bin/b"
description = "` + strings.Repeat("é", MaxDescriptionLength) + `"
`,
			want: func(c *Config) {
				a, b := stdio("a", "/usr/bin/a"), stdio("b", "/usr/bin/b")
				a.Description = "Read and write the project's files."
				b.Description = strings.Repeat("é", MaxDescriptionLength)
				c.Servers = []Server{a, b}
			},
		},
		{
			name: "allow_unsolicited",
			doc: `[servers.a]
command = "/usr/bin/a"
allow_unsolicited = ["sampling", "elicitation"]
[servers.b]
command = "/usr/bin/b"
allow_unsolicited = ["elicitation"]
`,
			want: func(c *Config) {
				a, b := stdio("a", "/usr/bin/a"), stdio("b", "/usr/bin/b")
				a.AllowUnsolicitedSampling, a.AllowUnsolicitedElicitation = true, true
				b.AllowUnsolicitedElicitation = true
				c.Servers = []Server{a, b}
			},
		},
		{
			name: "per-server settings override the globals",
			doc: `[servers.files]
command = "/usr/bin/fs"
prefix = "fs"
startup_timeout = "1s"
call_timeout = "2s"
max_message_bytes = 2097152
required = true
`,
			want: func(c *Config) {
				s := stdio("files", "/usr/bin/fs")
				s.Prefix = "fs"
				s.StartupTimeout = time.Second
				s.CallTimeout = 2 * time.Second
				s.MaxMessageBytes = 2 << 20
				s.Required = true
				c.Servers = []Server{s}
			},
		},
		{
			name: "relative command and cwd resolve against the config folder",
			doc: `[servers.local]
command = "./bin/server"
cwd = "data/work"

[servers.up]
command = "../tools/x"
cwd = "/srv"
`,
			want: func(c *Config) {
				local := stdio("local", "/etc/manifold/bin/server")
				local.Cwd = "/etc/manifold/data/work"
				up := stdio("up", "/etc/tools/x")
				up.Cwd = "/srv"
				c.Servers = []Server{local, up}
			},
		},
		{
			name: "remote server defaults to streamable and has no cwd",
			doc: `[servers.github]
url = "https://example.invalid/mcp"
headers = { Authorization = "Bearer ${GITHUB_TOKEN}" }

[servers.legacy]
url = "http://127.0.0.1:9000/sse"
transport = "sse"
prefix = ""
`,
			env: map[string]string{"GITHUB_TOKEN": "t0k"},
			want: func(c *Config) {
				c.Servers = []Server{
					{
						Name: "github", URL: "https://example.invalid/mcp", Transport: "streamable",
						Headers: map[string]string{"Authorization": "Bearer t0k"}, Prefix: "github",
						StartupTimeout: 30 * time.Second, CallTimeout: 60 * time.Second, MaxMessageBytes: 64 << 20, Pin: PinQuarantine,
					},
					{
						Name: "legacy", URL: "http://127.0.0.1:9000/sse", Transport: "sse", Prefix: "",
						StartupTimeout: 30 * time.Second, CallTimeout: 60 * time.Second, MaxMessageBytes: 64 << 20, Pin: PinQuarantine,
					},
				}
				c.Secrets = []string{"Bearer t0k"} // the Authorization header; "t0k" alone is too short
			},
		},
		{
			name: "environment expansion with defaults and $$",
			doc: `[servers.x]
command = "${BIN:-npx}"
args = ["--root=${HOME}", "cost: $$5", "price $5", "${EMPTY:-fallback}", "${EMPTY}", "${UNSET:-}"]
env = { TOKEN = "${TOKEN}", LITERAL = "$${NOT_EXPANDED}" }
cwd = "${HOME}/work"
prefix = "${PREFIX:-xx}"
`,
			env: map[string]string{"HOME": "/home/u", "TOKEN": "secret", "EMPTY": ""},
			want: func(c *Config) {
				s := stdio("x", "npx")
				s.Args = []string{"--root=/home/u", "cost: $5", "price $5", "fallback", "", ""}
				s.Env = map[string]string{"TOKEN": "secret", "LITERAL": "${NOT_EXPANDED}"}
				s.Cwd = "/home/u/work"
				s.Prefix = "xx"
				c.Servers = []Server{s}
				c.Secrets = []string{"secret"} // ${TOKEN}; ${HOME} is a path
			},
		},
		{
			name: "servers keep document order; disabled ones are left out unchecked",
			doc: `[servers.zeta]
command = "z"

[servers.off]
disabled = true
required = true
url = "${NOT_SET}"

[servers.alpha]
command = "a"
disabled = false

[servers.mid]
command = "m"
`,
			want: func(c *Config) {
				c.Servers = []Server{stdio("zeta", "z"), stdio("alpha", "a"), stdio("mid", "m")}
			},
		},
		{
			name: "inline and dotted server tables keep document order",
			doc: `servers.b.command = "b"
servers.a = { command = "a", args = ["1"] }
[servers.c.env]
K = "v"
[servers.c]
command = "c"
`,
			want: func(c *Config) {
				a := stdio("a", "a")
				a.Args = []string{"1"}
				cc := stdio("c", "c")
				cc.Env = map[string]string{"K": "v"}
				c.Servers = []Server{stdio("b", "b"), a, cc}
			},
		},
		{
			name: "empty prefixes may repeat and distinct prefixes may share a server name's letters",
			doc: `[servers.a]
command = "a"
prefix = ""
[servers.b]
command = "b"
prefix = ""
[servers.c]
command = "c"
prefix = "a"
`,
			want: func(c *Config) {
				a, b, cc := stdio("a", "a"), stdio("b", "b"), stdio("c", "c")
				a.Prefix, b.Prefix, cc.Prefix = "", "", "a"
				c.Servers = []Server{a, b, cc}
			},
		},
		{
			name: "byte order mark",
			doc:  "\uFEFFlog_level = \"warn\"\n",
			want: func(c *Config) { c.LogLevel = "warn" },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := defaults()
			tt.want(want)
			got, err := ParseEnv("/etc/manifold/proxy.toml", []byte(tt.doc), env(tt.env))
			if err != nil {
				t.Fatalf("ParseEnv: %v", err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("ParseEnv mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		env  map[string]string
		want string // the one problem expected
	}{
		// Syntax.
		{
			name: "syntax error has line and column",
			doc:  "call_timeout = \"5s\"\nlog_level = debug\n",
			want: `proxy.toml:2:13: invalid TOML: expected value but found "debug" instead`,
		},
		{
			name: "syntax error at the start of a line",
			doc:  "a = 1\n= 3\n",
			want: `proxy.toml:2:1: invalid TOML: unexpected '=': key name appears blank`,
		},
		{
			name: "duplicate table",
			doc:  "[servers.x]\ncommand = \"a\"\n[servers.x]\n",
			want: `proxy.toml:3:2: invalid TOML: Key 'servers.x' has already been defined.`,
		},

		{
			name: "description is at most 300 characters",
			doc:  "[servers.a]\ncommand = \"/usr/bin/a\"\ndescription = \"" + strings.Repeat("x", MaxDescriptionLength+1) + "\"\n",
			want: `proxy.toml:3:1: servers.a.description: 301 characters is too long; say in at most 300 characters what the server is for (it becomes one line of Manifold's instructions, which clients cut at 2 KB)`,
		},
		{
			name: "description is a string",
			doc:  "[servers.a]\ncommand = \"/usr/bin/a\"\ndescription = [\"files\"]\n",
			want: `proxy.toml:3:1: servers.a.description: expected a string, found array`,
		},
		{
			name: "description misspelt",
			doc:  "[servers.a]\ncommand = \"/usr/bin/a\"\ndescripton = \"files\"\n",
			want: `proxy.toml:3:1: servers.a.descripton: unknown key; did you mean "description"?`,
		},
		{
			name: "allow_unsolicited names a request kind",
			doc:  "[servers.a]\ncommand = \"/usr/bin/a\"\nallow_unsolicited = [\"sampling\", \"roots\"]\n",
			want: `proxy.toml:3:1: servers.a.allow_unsolicited: element 2: "roots" is not a request kind; write "sampling" or "elicitation" (roots/list is always allowed)`,
		},
		{
			name: "protocol is auto, 2026-07-28 or legacy",
			doc:  "[servers.a]\ncommand = \"/usr/bin/a\"\nprotocol = \"2025-11-25\"\n",
			want: `proxy.toml:3:1: servers.a.protocol: "2025-11-25" is a version of the initialize era; write protocol = "legacy" (the version is negotiated at initialize)`,
		},
		{
			name: "protocol modern is spelled 2026-07-28",
			doc:  "[servers.a]\ncommand = \"/usr/bin/a\"\nprotocol = \"modern\"\n",
			want: `proxy.toml:3:1: servers.a.protocol: "modern" is not a protocol; write protocol = "2026-07-28" to pin the stateless era`,
		},
		{
			name: "sse cannot speak 2026-07-28",
			doc:  "[servers.a]\nurl = \"https://example.com/sse\"\ntransport = \"sse\"\nprotocol = \"2026-07-28\"\n",
			want: `proxy.toml:4:1: servers.a.protocol: the sse transport belongs to the initialize era, so it cannot speak 2026-07-28; remove protocol, or use transport = "streamable"`,
		},
		{
			name: "probe_timeout is a duration",
			doc:  "[servers.a]\ncommand = \"/usr/bin/a\"\nprobe_timeout = 2\n",
			want: `proxy.toml:3:1: servers.a.probe_timeout: expected a duration string, found integer; write it with a unit, like "2s"`,
		},

		// Unknown keys.
		{
			name: "unknown top-level key",
			doc:  "log_level = \"info\"\ncall_timout = \"5s\"\n",
			want: `proxy.toml:2:1: call_timout: unknown key; did you mean "call_timeout"?`,
		},
		{
			name: "unknown top-level key in another case",
			doc:  "Log_Level = \"info\"\n",
			want: `proxy.toml:1:1: Log_Level: unknown key; did you mean "log_level"?`,
		},
		{
			name: "unknown key in a server",
			doc:  "[servers.files]\ncomand = \"npx\"\n",
			want: `proxy.toml:2:1: servers.files.comand: unknown key; did you mean "command"?`,
		},
		{
			name: "server key in another case",
			doc:  "[servers.files]\n  Command = \"npx\"\n",
			want: `proxy.toml:2:3: servers.files.Command: unknown key; did you mean "command"?`,
		},
		{
			name: "unknown key in an inline server table",
			doc:  "servers = { files = { command = \"x\", cwdd = \".\" } }\n",
			want: `proxy.toml:1:38: servers.files.cwdd: unknown key; did you mean "cwd"?`,
		},
		{
			name: "unknown dotted key",
			doc:  "servers.files.command = \"x\"\nservers.files.argz = []\n",
			want: `proxy.toml:2:15: servers.files.argz: unknown key; did you mean "args"?`,
		},
		{
			name: "unknown key without a close match lists the valid ones",
			doc:  "[http]\naddress = \"127.0.0.1:1\"\n",
			want: `proxy.toml:2:1: http.address: unknown key; valid keys here are listen, allowed_hosts, allowed_origins, max_body_bytes, header_timeout, body_timeout, max_sessions, session_idle_timeout, drain_grace, max_event_bytes`,
		},
		{
			name: "server table outside [servers]",
			doc:  "[files]\ncommand = \"npx\"\n",
			want: `proxy.toml:1:2: files: unknown key; to define a server, write [servers.files]`,
		},

		// Types.
		{
			name: "string where an array is expected",
			doc:  "[servers.a]\ncommand = \"npx\"\nargs = \"-y\"\n",
			want: `proxy.toml:3:1: servers.a.args: expected an array of strings such as ["a", "b"], found string`,
		},
		{
			name: "integer in an array of strings",
			doc:  "[servers.a]\ncommand = \"npx\"\nargs = [\"-p\", 80]\n",
			want: `proxy.toml:3:1: servers.a.args: element 2: expected a string, found integer; put every element in quotes`,
		},
		{
			name: "command written as an array",
			doc:  "[servers.a]\ncommand = [\"npx\", \"-y\"]\n",
			want: `proxy.toml:2:1: servers.a.command: expected a string, found array; put the program in command and its arguments in args = [...]`,
		},
		{
			name: "integer env value",
			doc:  "[servers.a]\ncommand = \"npx\"\nenv = { PORT = 80 }\n",
			want: `proxy.toml:3:9: servers.a.env.PORT: expected a string, found integer; put the value in quotes`,
		},
		{
			name: "string boolean",
			doc:  "[servers.a]\ncommand = \"npx\"\nrequired = \"yes\"\n",
			want: `proxy.toml:3:1: servers.a.required: expected true or false, found string; remove the quotes`,
		},
		{
			name: "string integer",
			doc:  "max_message_bytes = \"64MiB\"\n",
			want: `proxy.toml:1:1: max_message_bytes: expected an integer, found string; remove the quotes`,
		},
		{
			name: "float version",
			doc:  "version = 1.0\n",
			want: `proxy.toml:1:1: version: expected an integer, found float`,
		},
		{
			name: "array of server tables",
			doc:  "[[servers]]\ncommand = \"npx\"\n",
			want: `proxy.toml:1:3: servers: expected a table of servers such as [servers.NAME], found array of tables`,
		},
		{
			name: "server that is not a table",
			doc:  "[servers]\nfiles = \"npx\"\n",
			want: `proxy.toml:2:1: servers.files: expected a table with command = "..." or url = "...", found string`,
		},

		// Values.
		{
			name: "unsupported version",
			doc:  "version = 2\n",
			want: `proxy.toml:1:1: version: version 2 is not supported; this manifold reads version 1: set version = 1 or remove the key`,
		},
		{
			name: "duration without unit",
			doc:  "call_timeout = 30\n",
			want: `proxy.toml:1:1: call_timeout: expected a duration string, found integer; write it with a unit, like "30s"`,
		},
		{
			name: "bad duration",
			doc:  "startup_timeout = \"30\"\n",
			want: `proxy.toml:1:1: startup_timeout: "30" is not a duration; write it like "30s", "750ms" or "2m"`,
		},
		{
			name: "zero duration in a server",
			doc:  "[servers.a]\ncommand = \"a\"\ncall_timeout = \"0s\"\n",
			want: `proxy.toml:3:1: servers.a.call_timeout: "0s" is not greater than zero; write a positive duration like "30s"`,
		},
		{
			name: "max_name_length too small",
			doc:  "max_name_length = 8\n",
			want: `proxy.toml:1:1: max_name_length: 8 is out of range; use 16 to 64: 64 - len("mcp__<entry>__") for Claude Code, which is 49 for the entry "manifold"`,
		},
		{
			name: "negative first_list_timeout",
			doc:  "first_list_timeout = \"-1s\"\n",
			want: `proxy.toml:1:1: first_list_timeout: "-1s" is not greater than zero; write a positive duration like "30s"`,
		},
		{
			name: "max_message_bytes below 1 MiB",
			doc:  "[servers.a]\ncommand = \"a\"\nmax_message_bytes = 1000\n",
			want: `proxy.toml:3:1: servers.a.max_message_bytes: 1000 is out of range; use a number of bytes of at least 1048576 (1 MiB), like 67108864 (64 MiB)`,
		},
		{
			name: "bad log level",
			doc:  "log_level = \"verbose\"\n",
			want: `proxy.toml:1:1: log_level: "verbose" is not a log level; use "debug", "info", "warn" or "error"`,
		},
		{
			name: "bad listen address",
			doc:  "[http]\nlisten = \"7777\"\n",
			want: `proxy.toml:2:1: http.listen: "7777" is not a host:port address; write it like "127.0.0.1:7777"`,
		},
		{
			name: "http.max_body_bytes too small",
			doc:  "[http]\nmax_body_bytes = 100\n",
			want: `proxy.toml:2:1: http.max_body_bytes: 100 is out of range; use a number of bytes of at least 4096 (4 KiB), like 4194304 (4 MiB)`,
		},
		{
			name: "http.max_event_bytes too small",
			doc:  "[http]\nmax_event_bytes = 1000\n",
			want: `proxy.toml:2:1: http.max_event_bytes: 1000 is out of range; use a number of bytes between 65536 (64 KiB) and 1073741824 (1 GiB), like 10485760 (10 MiB)`,
		},
		{
			name: "http.max_event_bytes too large",
			doc:  "[http]\nmax_event_bytes = 2147483648\n",
			want: `proxy.toml:2:1: http.max_event_bytes: 2147483648 is out of range; use a number of bytes between 65536 (64 KiB) and 1073741824 (1 GiB), like 10485760 (10 MiB)`,
		},
		{
			name: "http.max_sessions zero",
			doc:  "[http]\n\nmax_sessions = 0\n",
			want: `proxy.toml:3:1: http.max_sessions: 0 is out of range; use a number of sessions between 1 and 1048576, like 100`,
		},
		{
			name: "http.body_timeout without unit",
			doc:  "[http]\nbody_timeout = 30\n",
			want: `proxy.toml:2:1: http.body_timeout: expected a duration string, found integer; write it with a unit, like "30s"`,
		},
		{
			name: "http.session_idle_timeout zero",
			doc:  "[http]\nsession_idle_timeout = \"0s\"\n",
			want: `proxy.toml:2:1: http.session_idle_timeout: "0s" is not greater than zero; write a positive duration like "30s"`,
		},
		{
			name: "origin with a path",
			doc:  "[http]\nallowed_origins = [\"https://app.example.com/\"]\n",
			want: `proxy.toml:2:1: http.allowed_origins: "https://app.example.com/" has a trailing "/" that an Origin header never has; remove it`,
		},

		// Environment.
		{
			name: "missing variable in a header",
			doc:  "[servers.gh]\nurl = \"https://example.invalid/mcp\"\nheaders = { Authorization = \"Bearer ${GITHUB_TOKEN}\" }\nrequired = true\n",
			want: `proxy.toml:3:13: servers.gh.headers.Authorization: environment variable GITHUB_TOKEN is not set; set it, or write ${GITHUB_TOKEN:-default} to fall back to a default`,
		},
		{
			name: "missing variable in args",
			doc:  "[servers.a]\ncommand = \"a\"\nargs = [\"--root\", \"${ROOT}\"]\nrequired = true\n",
			want: `proxy.toml:3:1: servers.a.args: environment variable ROOT is not set; set it, or write ${ROOT:-default} to fall back to a default`,
		},
		{
			name: "unterminated variable",
			doc:  "[servers.a]\ncommand = \"${BIN\"\n",
			want: `proxy.toml:2:1: servers.a.command: unterminated "${" in "${BIN"; close it with "}" or write "$$" for a literal "$"`,
		},
		{
			name: "invalid variable name",
			doc:  "[servers.a]\ncommand = \"${1X}\"\n",
			want: `proxy.toml:2:1: servers.a.command: invalid variable name "1X" in "${1X}"; use letters, digits and '_', not starting with a digit, or write "$$" for a literal "$"`,
		},

		// Servers.
		{
			name: "command and url",
			doc:  "[servers.a]\ncommand = \"a\"\nurl = \"https://example.invalid\"\n",
			want: `proxy.toml:1:10: servers.a: both command and url are set; keep command to start a local server, or url to reach a remote one`,
		},
		{
			name: "neither command nor url",
			doc:  "[servers.a]\nargs = [\"x\"]\n",
			want: `proxy.toml:1:10: servers.a: neither command nor url is set; set command = "..." to start a local server, or url = "https://..." to reach a remote one`,
		},
		{
			name: "empty command",
			doc:  "[servers.a]\ncommand = \"${BIN:-}\"\n",
			want: `proxy.toml:2:1: servers.a.command: command is empty; set it to a program name like "npx" or a path like "./bin/server"`,
		},
		{
			name: "headers with command",
			doc:  "[servers.a]\ncommand = \"a\"\nheaders = { X = \"y\" }\n",
			want: `proxy.toml:3:1: servers.a.headers: headers is only for a remote server (one with url); remove it`,
		},
		{
			name: "cwd with url",
			doc:  "[servers.a]\nurl = \"https://example.invalid\"\ncwd = \"/tmp\"\n",
			want: `proxy.toml:3:1: servers.a.cwd: cwd is only for a local server (one with command); remove it`,
		},
		{
			name: "url with another scheme",
			doc:  "[servers.a]\nurl = \"ftp://example.invalid\"\n",
			want: `proxy.toml:2:1: servers.a.url: "ftp://example.invalid" is not an http:// or https:// URL with a host; write it like "https://example.com/mcp"`,
		},
		{
			name: "url without host shows the value as written",
			doc:  "[servers.a]\nurl = \"https://${HOST}\"\n",
			env:  map[string]string{"HOST": ""},
			want: `proxy.toml:2:1: servers.a.url: "https://${HOST}" is not an http:// or https:// URL with a host; write it like "https://example.com/mcp"`,
		},
		{
			name: "bad transport",
			doc:  "[servers.a]\nurl = \"https://example.invalid\"\ntransport = \"websocket\"\n",
			want: `proxy.toml:3:1: servers.a.transport: "websocket" is not a transport; use "streamable" (the default) or "sse"`,
		},
		{
			name: "server name with a dot",
			doc:  "[servers.\"my.server\"]\ncommand = \"a\"\n",
			want: `proxy.toml:1:10: servers."my.server": server name "my.server" is not valid; use 1 to 32 letters, digits, '_' or '-', starting with a letter or digit`,
		},
		{
			name: "server name starting with an underscore",
			doc:  "[servers._a]\ncommand = \"a\"\n",
			want: `proxy.toml:1:10: servers._a: server name "_a" is not valid; use 1 to 32 letters, digits, '_' or '-', starting with a letter or digit`,
		},
		{
			name: "server name too long",
			doc:  "[servers." + strings.Repeat("a", 33) + "]\ncommand = \"a\"\n",
			want: `proxy.toml:1:10: servers.` + strings.Repeat("a", 33) + `: server name "` + strings.Repeat("a", 33) + `" is not valid; use 1 to 32 letters, digits, '_' or '-', starting with a letter or digit`,
		},
		{
			name: "bad prefix",
			doc:  "[servers.a]\ncommand = \"a\"\nprefix = \"a.b\"\n",
			want: `proxy.toml:3:1: servers.a.prefix: prefix "a.b" is not valid; use at most 32 letters, digits, '_' or '-', or "" to expose names unchanged`,
		},
		{
			name: "prefix too long for max_name_length",
			doc:  "max_name_length = 20\n[servers.a]\ncommand = \"a\"\nprefix = \"a_rather_long_prefix_name\"\n",
			want: `proxy.toml:4:1: servers.a.prefix: prefix "a_rather_long_prefix_name" (25 characters) does not fit in max_name_length = 20 with "__" and room for a shortened name (10 characters): its names would lose the prefix and leave its namespace; use a prefix of at most 8 characters, or max_name_length = 37 or more`,
		},
		{
			name: "server name too long as a prefix for max_name_length",
			doc:  "max_name_length = 16\n[servers.abcde]\ncommand = \"a\"\n",
			want: `proxy.toml:2:10: servers.abcde: prefix "abcde" (5 characters) does not fit in max_name_length = 16 with "__" and room for a shortened name (10 characters): its names would lose the prefix and leave its namespace; use a prefix of at most 4 characters, or max_name_length = 17 or more`,
		},
		{
			name: "duplicate prefix",
			doc:  "[servers.a]\ncommand = \"a\"\nprefix = \"fs\"\n[servers.b]\ncommand = \"b\"\nprefix = \"fs\"\n",
			want: `proxy.toml:6:1: servers.b.prefix: servers "a" and "b" both use prefix "fs"; give one of them another prefix`,
		},
		{
			name: "prefix equal to another server's name",
			doc:  "[servers.a]\ncommand = \"a\"\nprefix = \"b\"\n[servers.b]\ncommand = \"b\"\n",
			want: `proxy.toml:4:10: servers.b: servers "a" and "b" both use prefix "b"; give one of them another prefix`,
		},
		{
			name: "prefixes that differ by case collide as URI prefixes",
			doc:  "[servers.files]\ncommand = \"a\"\n[servers.Files]\ncommand = \"b\"\n",
			want: `proxy.toml:3:10: servers.Files: servers "files" (prefix "files") and "Files" (prefix "Files") both get resource URI prefix "files"; change one of the prefixes`,
		},
		{
			name: "underscore and dash collide as URI prefixes",
			doc:  "[servers.a]\ncommand = \"a\"\nprefix = \"my_fs\"\n[servers.b]\ncommand = \"b\"\nprefix = \"my-fs\"\n",
			want: `proxy.toml:6:1: servers.b.prefix: servers "a" (prefix "my_fs") and "b" (prefix "my-fs") both get resource URI prefix "my-fs"; change one of the prefixes`,
		},
		{
			name: "a digit prefix collides with its m-prefixed form",
			doc:  "[servers.m1x]\ncommand = \"a\"\n[servers.1x]\ncommand = \"b\"\n",
			want: `proxy.toml:3:10: servers.1x: servers "m1x" (prefix "m1x") and "1x" (prefix "1x") both get resource URI prefix "m1x"; change one of the prefixes`,
		},
		{
			name: "unknown key in a disabled server is still reported",
			doc:  "[servers.a]\ndisabled = true\ncomand = \"a\"\n",
			want: `proxy.toml:3:1: servers.a.comand: unknown key; did you mean "command"?`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := ParseEnv("proxy.toml", []byte(tt.doc), env(tt.env))
			if cfg != nil {
				t.Errorf("ParseEnv returned a config with an error")
			}
			if diff := cmp.Diff([]string{tt.want}, problems(t, err)); diff != "" {
				t.Errorf("ParseEnv problems (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseReportsEveryProblemInFileOrder(t *testing.T) {
	doc := `call_timeout = 30
log_levl = "debug"

[servers.fs]
command = "npx"
args = ["${FS_ROOT}"]
prefix = "files"
required = true

[servers.web]
url = "ftp://example.invalid"

[servers.files]
command = "other"
`
	want := []string{
		`proxy.toml:1:1: call_timeout: expected a duration string, found integer; write it with a unit, like "30s"`,
		`proxy.toml:2:1: log_levl: unknown key; did you mean "log_level"?`,
		`proxy.toml:6:1: servers.fs.args: environment variable FS_ROOT is not set; set it, or write ${FS_ROOT:-default} to fall back to a default`,
		`proxy.toml:11:1: servers.web.url: "ftp://example.invalid" is not an http:// or https:// URL with a host; write it like "https://example.com/mcp"`,
		`proxy.toml:13:10: servers.files: servers "fs" and "files" both use prefix "files"; give one of them another prefix`,
	}
	_, err := ParseEnv("proxy.toml", []byte(doc), env(nil))
	if diff := cmp.Diff(want, problems(t, err)); diff != "" {
		t.Errorf("ParseEnv problems (-want +got):\n%s", diff)
	}
}

func TestParseReportsEachCollisionOnce(t *testing.T) {
	doc := `[servers.a]
command = "a"
prefix = "p"
[servers.b]
command = "b"
prefix = "p"
[servers.c]
command = "c"
prefix = "P"
`
	want := []string{
		`proxy.toml:6:1: servers.b.prefix: servers "a" and "b" both use prefix "p"; give one of them another prefix`,
		`proxy.toml:9:1: servers.c.prefix: servers "a" (prefix "p") and "c" (prefix "P") both get resource URI prefix "p"; change one of the prefixes`,
	}
	_, err := ParseEnv("proxy.toml", []byte(doc), env(nil))
	if diff := cmp.Diff(want, problems(t, err)); diff != "" {
		t.Errorf("ParseEnv problems (-want +got):\n%s", diff)
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "proxy.toml")
	doc := "[servers.a]\ncommand = \"./bin/a\"\n"
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(path)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	want := []Server{{
		Name: "a", Command: filepath.Join(dir, "bin", "a"), Cwd: dir, Prefix: "a",
		StartupTimeout: DefaultStartupTimeout, CallTimeout: DefaultCallTimeout, MaxMessageBytes: DefaultMaxMessageBytes,
		Pin: PinQuarantine,
	}}
	if diff := cmp.Diff(want, cfg.Servers); diff != "" {
		t.Errorf("Load servers (-want +got):\n%s", diff)
	}
	if cfg.Path != path || cfg.Dir != dir {
		t.Errorf("Load: Path, Dir = %q, %q; want %q, %q", cfg.Path, cfg.Dir, path, dir)
	}
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.toml")
	bad := filepath.Join(dir, "bad.toml")
	if err := os.WriteFile(bad, []byte("x = \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		path      string
		noConfig  bool
		wantStart string
	}{
		{name: "missing file", path: missing, noConfig: true, wantStart: missing + ": not found; create it or pass the path of an existing file"},
		{name: "directory", path: dir, wantStart: dir + ": cannot read config: "},
		{name: "syntax error", path: bad, wantStart: bad + ":1:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := Load(tt.path)
			if err == nil || cfg != nil {
				t.Fatalf("Load = %v, %v; want an error", cfg, err)
			}
			if got := errors.Is(err, ErrNoConfig); got != tt.noConfig {
				t.Errorf("errors.Is(%v, ErrNoConfig) = %v, want %v", err, got, tt.noConfig)
			}
			if !strings.HasPrefix(err.Error(), tt.wantStart) {
				t.Errorf("Load error = %q, want it to start with %q", err, tt.wantStart)
			}
		})
	}
}

func TestURIPrefix(t *testing.T) {
	tests := []struct {
		prefix, want string
	}{
		{"", ""},
		{"files", "files"},
		{"GitHub", "github"},
		{"my_fs", "my-fs"},
		{"1x", "m1x"},
		{"_x", "m-x"},
		{"-", "m-"},
	}
	for _, tt := range tests {
		if got := URIPrefix(tt.prefix); got != tt.want {
			t.Errorf("URIPrefix(%q) = %q, want %q", tt.prefix, got, tt.want)
		}
	}
}

// TestParseNamespaces refuses what the proxy would refuse at run time: a
// prefix inside another's namespace, and an override name in another
// server's or plugin's namespace. A rename within its own namespace is fine.
func TestParseNamespaces(t *testing.T) {
	doc := `[servers.files]
command = "a"
[servers.nested]
command = "b"
prefix = "files__x"
[servers.squat]
command = "c"
prefix = ""
[servers.squat.overrides.write]
name = "files__write_file"
[servers.files.overrides.read]
name = "files__read_it"
[servers.gh]
command = "d"
[servers.gh.overrides.issue]
name = "gh_issue"
`
	want := []string{
		`proxy.toml:5:1: servers.nested.prefix: servers "files" (prefix "files") and "nested" (prefix "files__x"): one prefix lies in the namespace of the other (files__*), so their names could collide; change one of the prefixes`,
		`proxy.toml:10:1: servers.squat.overrides.write.name: "files__write_file" lies in the namespace of server "files" (prefix "files"), where only that server's names may be exposed; choose a name that does not start with "files__"`,
	}
	_, err := ParseEnv("proxy.toml", []byte(doc), env(nil))
	if diff := cmp.Diff(want, problems(t, err)); diff != "" {
		t.Errorf("ParseEnv problems (-want +got):\n%s", diff)
	}
}
