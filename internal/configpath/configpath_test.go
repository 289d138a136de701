package configpath

import (
	"os"
	"path/filepath"
	"testing"
)

// TestFind: the flag, then $MANIFOLD_CONFIG, then ./proxy.toml if it exists,
// then the user's config folder's manifold/proxy.toml if it exists, then
// ./proxy.toml.
func TestFind(t *testing.T) {
	wd, home := t.TempDir(), t.TempDir()
	t.Chdir(wd)
	t.Setenv("XDG_CONFIG_HOME", home+"/")
	t.Setenv("MANIFOLD_CONFIG", "")
	if got := Find(""); got != "proxy.toml" {
		t.Errorf("nothing exists: %q, want proxy.toml", got)
	}
	user := filepath.Join(home, "manifold", "proxy.toml")
	if err := os.MkdirAll(filepath.Dir(user), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(user, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if got := Find(""); got != user {
		t.Errorf("the user's exists: %q, want %q", got, user)
	}
	if err := os.WriteFile("proxy.toml", nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if got := Find(""); got != "proxy.toml" {
		t.Errorf("./proxy.toml exists: %q, want proxy.toml", got)
	}
	t.Setenv("MANIFOLD_CONFIG", "/etc/m.toml")
	if got := Find(""); got != "/etc/m.toml" {
		t.Errorf("$MANIFOLD_CONFIG: %q", got)
	}
	if got := Find("given.toml"); got != "given.toml" {
		t.Errorf("the flag: %q", got)
	}
}

// TestForWrite: Find's file when one exists or is named; else the user's
// config folder's, not ./proxy.toml.
func TestForWrite(t *testing.T) {
	wd, home := t.TempDir(), t.TempDir()
	t.Chdir(wd)
	t.Setenv("XDG_CONFIG_HOME", home)
	t.Setenv("MANIFOLD_CONFIG", "")
	user := filepath.Join(home, "manifold", "proxy.toml")
	if got, err := ForWrite(""); err != nil || got != user {
		t.Errorf("nothing exists: %q, %v; want %q", got, err, user)
	}
	if got, _ := ForWrite("given.toml"); got != "given.toml" {
		t.Errorf("named: %q", got)
	}
	if err := os.WriteFile("proxy.toml", nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if got, _ := ForWrite(""); got != "proxy.toml" {
		t.Errorf("./proxy.toml exists: %q, want proxy.toml", got)
	}
	t.Setenv("MANIFOLD_CONFIG", "/etc/m.toml")
	if got, _ := ForWrite(""); got != "/etc/m.toml" {
		t.Errorf("$MANIFOLD_CONFIG: %q", got)
	}
}
