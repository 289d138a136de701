package config

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// plugin is a Plugin with the defaults of a plugin named name in
// /etc/manifold/proxy.toml.
func plugin(name, command string) Plugin {
	return Plugin{
		Name:           name,
		Command:        command,
		Prefix:         name,
		StartupTimeout: 30 * time.Second,
		CallTimeout:    60 * time.Second,
	}
}

func TestParsePlugins(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		env  map[string]string
		want func(c *Config)
	}{
		{
			name: "relative path resolves against the config folder; defaults apply",
			doc: `call_timeout = "5s"
[plugins.iban]
path = "bin/iban"
`,
			want: func(c *Config) {
				c.CallTimeout = 5 * time.Second
				p := plugin("iban", "/etc/manifold/bin/iban")
				p.CallTimeout = 5 * time.Second
				c.Plugins = []Plugin{p}
			},
		},
		{
			name: "every key",
			doc: `[plugins.tools]
command = "my-plugin"
args = ["--verbose", "${MODE:-fast}"]
env = { PATH = "${PATH}", TOKEN = "t" }
sha256 = "E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855"
prefix = "t"
startup_timeout = "2s"
call_timeout = "3s"
required = true
disabled = false
`,
			env: map[string]string{"PATH": "/usr/bin:/bin"},
			want: func(c *Config) {
				p := plugin("tools", "my-plugin")
				p.Args = []string{"--verbose", "fast"}
				p.Env = map[string]string{"PATH": "/usr/bin:/bin", "TOKEN": "t"}
				p.SHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
				p.Prefix = "t"
				p.StartupTimeout = 2 * time.Second
				p.CallTimeout = 3 * time.Second
				p.Required = true
				c.Plugins = []Plugin{p}
			},
		},
		{
			name: "command with a separator resolves; absolute path stays",
			doc: `[plugins.a]
command = "./tools/a"
[plugins.b]
path = "/opt/b"
prefix = ""
`,
			want: func(c *Config) {
				b := plugin("b", "/opt/b")
				b.Prefix = ""
				c.Plugins = []Plugin{plugin("a", "/etc/manifold/tools/a"), b}
			},
		},
		{
			name: "plugins keep document order; disabled ones are left out unchecked",
			doc: `[plugins.zeta]
path = "z"
[plugins.off]
disabled = true
path = "${NOT_SET}"
sha256 = "nope"
[plugins.alpha]
path = "a"
`,
			want: func(c *Config) {
				c.Plugins = []Plugin{plugin("zeta", "/etc/manifold/z"), plugin("alpha", "/etc/manifold/a")}
			},
		},
		{
			name: "servers and plugins side by side",
			doc: `[servers.files]
command = "npx"
[plugins.iban]
path = "bin/iban"
[servers.web]
url = "https://example.invalid/mcp"
prefix = "w"
`,
			want: func(c *Config) {
				c.Servers = []Server{stdio("files", "npx"), {
					Name: "web", URL: "https://example.invalid/mcp", Transport: "streamable", Prefix: "w",
					StartupTimeout: 30 * time.Second, CallTimeout: 60 * time.Second, MaxMessageBytes: 64 << 20, Pin: PinQuarantine,
				}}
				c.Plugins = []Plugin{plugin("iban", "/etc/manifold/bin/iban")}
			},
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

func TestParsePluginErrors(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		want string // the one problem expected
	}{
		{
			name: "path and command",
			doc:  "[plugins.a]\npath = \"a\"\ncommand = \"a\"\n",
			want: `proxy.toml:1:10: plugins.a: both path and command are set; keep path for the plugin's file, or command for a program looked up in PATH`,
		},
		{
			name: "neither path nor command",
			doc:  "[plugins.a]\nargs = [\"x\"]\n",
			want: `proxy.toml:1:10: plugins.a: neither path nor command is set; set path = "bin/a" to the plugin's executable`,
		},
		{
			name: "empty path",
			doc:  "[plugins.a]\npath = \"${DIR:-}\"\n",
			want: `proxy.toml:2:1: plugins.a.path: path is empty; set it to the plugin's executable, like "bin/a"`,
		},
		{
			name: "empty command",
			doc:  "[plugins.a]\ncommand = \"\"\n",
			want: `proxy.toml:2:1: plugins.a.command: command is empty; set it to a program name, or use path = "bin/a" for a file`,
		},
		{
			name: "path as an array",
			doc:  "[plugins.a]\npath = [\"bin/a\", \"-v\"]\n",
			want: `proxy.toml:2:1: plugins.a.path: expected a string, found array; put the executable in path and its arguments in args = [...]`,
		},
		{
			name: "bad sha256",
			doc:  "[plugins.a]\npath = \"a\"\nsha256 = \"abc\"\n",
			want: `proxy.toml:3:1: plugins.a.sha256: "abc" is not a SHA-256; write the 64 hex digits that "sha256sum FILE" prints`,
		},
		{
			name: "misspelt key",
			doc:  "[plugins.a]\npath = \"a\"\nsha265 = \"abc\"\n",
			want: `proxy.toml:3:1: plugins.a.sha265: unknown key; did you mean "sha256"?`,
		},
		{
			name: "server key in another case",
			doc:  "[plugins.a]\nPath = \"a\"\n",
			want: `proxy.toml:2:1: plugins.a.Path: unknown key; did you mean "path"?`,
		},
		{
			name: "missing variable in env",
			doc:  "[plugins.a]\npath = \"a\"\nenv = { HOME = \"${HOME}\" }\n",
			want: `proxy.toml:3:9: plugins.a.env.HOME: environment variable HOME is not set; set it, or write ${HOME:-default} to fall back to a default`,
		},
		{
			name: "bad name",
			doc:  "[plugins.\"a.b\"]\npath = \"a\"\n",
			want: `proxy.toml:1:10: plugins."a.b": plugin name "a.b" is not valid; use 1 to 32 letters, digits, '_' or '-', starting with a letter or digit`,
		},
		{
			name: "array of plugin tables",
			doc:  "[[plugins]]\npath = \"a\"\n",
			want: `proxy.toml:1:3: plugins: expected a table of plugins such as [plugins.NAME], found array of tables`,
		},
		{
			name: "plugin that is not a table",
			doc:  "[plugins]\niban = \"bin/iban\"\n",
			want: `proxy.toml:2:1: plugins.iban: expected a table with path = "...", found string`,
		},
		{
			name: "same name as a server",
			doc:  "[servers.x]\ncommand = \"x\"\nprefix = \"s\"\n[plugins.x]\npath = \"x\"\nprefix = \"p\"\n",
			want: `proxy.toml:4:10: plugins.x: plugin "x" has the name of a server; plugins and servers share names: rename one of them`,
		},
		{
			name: "prefix of a server",
			doc:  "[servers.files]\ncommand = \"x\"\n[plugins.iban]\npath = \"x\"\nprefix = \"files\"\n",
			want: `proxy.toml:5:1: plugins.iban.prefix: server "files" and plugin "iban" both use prefix "files"; give one of them another prefix`,
		},
		{
			name: "name that is a server's prefix",
			doc:  "[servers.files]\ncommand = \"x\"\nprefix = \"iban\"\n[plugins.iban]\npath = \"x\"\n",
			want: `proxy.toml:4:10: plugins.iban: server "files" and plugin "iban" both use prefix "iban"; give one of them another prefix`,
		},
		{
			name: "prefix of another plugin",
			doc:  "[plugins.a]\npath = \"a\"\nprefix = \"p\"\n[plugins.b]\npath = \"b\"\nprefix = \"p\"\n",
			want: `proxy.toml:6:1: plugins.b.prefix: plugin "a" and plugin "b" both use prefix "p"; give one of them another prefix`,
		},
		{
			name: "URI prefix of a server",
			doc:  "[servers.my_fs]\ncommand = \"x\"\n[plugins.my-fs]\npath = \"x\"\n",
			want: `proxy.toml:3:10: plugins.my-fs: server "my_fs" (prefix "my_fs") and plugin "my-fs" (prefix "my-fs") both get resource URI prefix "my-fs"; change one of the prefixes`,
		},
		{
			name: "plugin table outside [plugins] with a server's keys",
			doc:  "[iban]\ncommand = \"x\"\n",
			want: `proxy.toml:1:2: iban: unknown key; to define a server, write [servers.iban]`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := ParseEnv("proxy.toml", []byte(tt.doc), env(nil))
			if cfg != nil {
				t.Errorf("ParseEnv returned a config with an error")
			}
			if diff := cmp.Diff([]string{tt.want}, problems(t, err)); diff != "" {
				t.Errorf("ParseEnv problems (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParsePluginsReportsEveryProblem(t *testing.T) {
	doc := `[plugins.a]
comand = "a"

[plugins.b]
path = "b"
sha256 = "xyz"
startup_timeout = 5
`
	want := []string{
		`proxy.toml:2:1: plugins.a.comand: unknown key; did you mean "command"?`,
		`proxy.toml:6:1: plugins.b.sha256: "xyz" is not a SHA-256; write the 64 hex digits that "sha256sum FILE" prints`,
		`proxy.toml:7:1: plugins.b.startup_timeout: expected a duration string, found integer; write it with a unit, like "5s"`,
	}
	_, err := ParseEnv("proxy.toml", []byte(doc), env(nil))
	if diff := cmp.Diff(want, problems(t, err)); diff != "" {
		t.Errorf("ParseEnv problems (-want +got):\n%s", diff)
	}
}
