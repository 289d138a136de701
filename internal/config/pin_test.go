package config

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestPinKeys(t *testing.T) {
	for _, tc := range []struct {
		name, doc   string
		pin, lock   string
		servers     map[string]string
		wantProblem string
	}{
		{name: "defaults", doc: "[servers.a]\ncommand = \"a\"\n", pin: "quarantine", lock: "/etc/manifold/manifold.lock", servers: map[string]string{"a": "quarantine"}},
		{name: "top level and server wins", doc: "pin = \"warn\"\nlock_file = \"state/pins.lock\"\n[servers.a]\ncommand = \"a\"\n[servers.b]\ncommand = \"b\"\npin = \"off\"\n[servers.c]\ncommand = \"c\"\npin = \"quarantine\"\n",
			pin: "warn", lock: "/etc/manifold/state/pins.lock", servers: map[string]string{"a": "warn", "b": "off", "c": "quarantine"}},
		{name: "bad top-level mode", doc: "pin = \"strict\"\n", wantProblem: `proxy.toml:1:1: pin: "strict" is not a pin mode; write "quarantine"`},
		{name: "bad server mode", doc: "[servers.a]\ncommand = \"a\"\npin = true\n", wantProblem: "pin: expected a string"},
		{name: "empty lock_file", doc: "lock_file = \"\"\n", wantProblem: "lock_file is empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := ParseEnv("/etc/manifold/proxy.toml", []byte(tc.doc), func(string) (string, bool) { return "", false })
			if tc.wantProblem != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantProblem) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantProblem)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, s := range cfg.Servers {
				got[s.Name] = s.Pin
			}
			if diff := cmp.Diff(tc.servers, got); diff != "" || cfg.Pin != tc.pin || cfg.LockFile != tc.lock {
				t.Errorf("pin %q lock %q; servers (-want +got):\n%s", cfg.Pin, cfg.LockFile, diff)
			}
		})
	}
}
