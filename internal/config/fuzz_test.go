package config

import (
	"errors"
	"strings"
	"testing"
)

func FuzzParse(f *testing.F) {
	seeds := []string{
		"",
		"version = 1\ncall_timeout = \"5s\"\n[http]\nallowed_origins = [\"https://a.example\"]\n",
		"[servers.files]\ncommand = \"npx\"\nargs = [\"-y\", \"${ROOT:-.}\"]\nenv = { A = \"$$\" }\n",
		"[servers.gh]\nurl = \"https://example.invalid/mcp\"\nheaders = { Authorization = \"Bearer ${TOKEN}\" }\ntransport = \"sse\"\n",
		"servers = { a = { command = \"a\", prefix = \"\" }, b = { url = \"http://x\", prefix = \"A\" } }\n",
		"servers.a.command = \"./a\"\nservers.a.Cwd = 1\n[servers.b.env]\nX = 1\n",
		"[[servers]]\ncommand = 1\n",
		"log_level = debug\n",
		"\uFEFF[servers.\"a.b\"]\ncomand = \"${\"\n",
		"[plugins.iban]\npath = \"bin/iban\"\nsha256 = \"${SUM:-}\"\nenv = { PATH = \"${PATH}\" }\n[servers.iban]\ncommand = \"x\"\n",
		"plugins = { a = { command = \"a\", prefix = \"\" }, b = { path = \"./b\", prefix = \"A\", disabled = true } }\n",
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	lookup := env(map[string]string{"HOME": "/home/u", "TOKEN": "t", "EMPTY": ""})
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := ParseEnv("proxy.toml", data, lookup)
		if err == nil {
			if cfg == nil {
				t.Fatal("ParseEnv returned neither a config nor an error")
			}
			for _, s := range cfg.Servers {
				if (s.Command == "") == (s.URL == "") {
					t.Errorf("server %q: Command %q, URL %q: want exactly one", s.Name, s.Command, s.URL)
				}
			}
			for _, p := range cfg.Plugins {
				if p.Command == "" {
					t.Errorf("plugin %q has no Command", p.Name)
				}
			}
			return
		}
		if cfg != nil {
			t.Error("ParseEnv returned a config with an error")
		}
		var errs []error
		var joined interface{ Unwrap() []error }
		if errors.As(err, &joined) {
			errs = joined.Unwrap()
		} else {
			errs = []error{err}
		}
		line := 0
		for _, e := range errs {
			msg := e.Error()
			if !strings.HasPrefix(msg, "proxy.toml:") {
				t.Errorf("problem %q does not start with the file name", msg)
			}
			if strings.Contains(msg, "\n") {
				t.Errorf("problem %q spans several lines", msg)
			}
			if p, ok := e.(*problem); ok && p.line > 0 {
				if p.line < line {
					t.Errorf("problem %q is out of file order", msg)
				}
				line = p.line
			}
		}
	})
}
