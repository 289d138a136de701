// Package configpath says which config file a command uses when it is
// given none: internal/config's Path, and internal/earlystart's, which must
// find the same file without config's dependencies.
package configpath

import (
	"os"
	"path"
	"strings"
)

// Find is the config file a command uses: flag (the --config flag or the
// file argument) if set, else $MANIFOLD_CONFIG, else ./proxy.toml if it
// exists, else proxy.toml in the user's config folder
// ($XDG_CONFIG_HOME/manifold) if it exists, else ./proxy.toml.
func Find(flag string) string {
	if flag != "" {
		return flag
	}
	if p := os.Getenv("MANIFOLD_CONFIG"); p != "" {
		return p
	}
	if _, err := os.Stat("proxy.toml"); err == nil {
		return "proxy.toml"
	}
	if dir, err := os.UserConfigDir(); err == nil {
		p := join(dir, "manifold", "proxy.toml")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return "proxy.toml"
}

// ForWrite is the file a command that writes the config (import --write,
// init) writes when given none: Find's, except that when no file exists
// it is the user's config folder's manifold/proxy.toml, which Find returns
// from any folder that has no proxy.toml of its own, rather than one in
// the current folder, which only a manifold started there would find.
func ForWrite(flag string) (string, error) {
	p := Find(flag)
	if flag != "" || os.Getenv("MANIFOLD_CONFIG") != "" {
		return p, nil
	}
	if _, err := os.Stat(p); err == nil {
		return p, nil
	}
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", err
	}
	return join(dir, "manifold", "proxy.toml"), nil
}

// join is filepath.Join for a folder and plain names, without
// path/filepath, whose initialisation comes late (internal/earlystart).
func join(dir string, names ...string) string {
	if os.PathSeparator == '/' {
		return path.Join(append([]string{dir}, names...)...)
	}
	return strings.Join(append([]string{strings.TrimRight(dir, `\/`)}, names...), string(os.PathSeparator))
}
