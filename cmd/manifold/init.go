package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"os"
	"path/filepath"

	"github.com/manifold-mcp/manifold/internal/clientconf"
	"github.com/manifold-mcp/manifold/internal/config"
)

// starter is the proxy.toml that manifold init writes: it loads as is and
// explains the keys a new user needs.
const starter = `# Manifold's config, written by "manifold init". Each [servers.NAME] table
# is one MCP server behind Manifold; a client gets one entry, Manifold
# (manifold connect CLIENT). Check it with "manifold check", see the merged
# catalog with "manifold tools", every key with "manifold help config".

startup_timeout = "60s"   # spawn + initialize of a server; npx may download on first run
call_timeout = "60s"      # one call to a server
# read_only = true        # expose only tools annotated read-only

# A local server: a program and its arguments. Bare names are looked up in
# PATH; clients may give manifold a short PATH, so full paths are safest.
#
# [servers.files]
# command = "npx"
# args = ["-y", "@modelcontextprotocol/server-filesystem", "/home/me/notes"]
# env = { LOG_LEVEL = "warn" }        # ${VAR} expands from the environment
# tools.deny = ["write_*", "move_*"]  # globs of the server's own tool names
#
# A remote server over streamable HTTP (transport = "sse" for the older one):
#
# [servers.github]
# url = "https://api.githubcopilot.com/mcp/"
# headers = { Authorization = "Bearer ${GITHUB_TOKEN}" }
`

// cmdInit writes a starter proxy.toml, with --import the servers the
// clients have.
func cmdInit(_ context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	var c common
	fs := newFlags("init", "init [--config FILE] [--import] [--force]", levelOneShot, stderr, &c)
	withImport := fs.Bool("import", false, "add the servers your clients have (as manifold import finds them)")
	force := fs.Bool("force", false, "replace an existing file (it is backed up first)")
	pos, ok, err := parse(fs, args)
	if !ok {
		return err
	}
	if len(pos) > 0 {
		return argError("init", "no arguments expected, got %q; name the file with --config", pos)
	}
	path := c.config
	if path == "" {
		path = os.Getenv("MANIFOLD_CONFIG")
	}
	if path == "" {
		dir, err := os.UserConfigDir()
		if err != nil {
			return fmt.Errorf("init: find the config folder: %w; name the file with --config", err)
		}
		path = filepath.Join(dir, "manifold", "proxy.toml")
	}
	old, exists, err := readBounded(path)
	if err != nil {
		return err
	}
	if exists && !*force {
		return exitError{code: 1, msg: fmt.Sprintf("init: %s exists; add servers to it with manifold import --write --config %s, or replace it with --force", path, path)}
	}
	text := []byte(starter)
	if *withImport {
		env, err := clientconf.OSEnv()
		if err != nil {
			return err
		}
		locs, _ := importLocations(nil, "", env)
		im := clientconf.NewImporter(env)
		for _, loc := range locs {
			if data, found, err := readBounded(loc.Path); err == nil && found {
				if err := im.Add(loc, data); err != nil {
					fmt.Fprintf(stderr, "manifold init: %v; skipped\n", err)
				}
			}
		}
		m, err := clientconf.Merge(text, im.Entries())
		if err != nil {
			return exitError{code: 1, msg: "init: " + err.Error()}
		}
		text = m.Text
		fmt.Fprintf(stderr, "Imported %s from your clients.\n", count(len(m.Added), "server"))
	}
	if _, err := config.ParseEnv(path, text, func(string) (string, bool) { return "https://set.invalid", true }); err != nil {
		return fmt.Errorf("init: internal error: the starter config does not load: %w", err)
	}
	if exists {
		b, err := backupFile(path, old)
		if err != nil {
			return err
		}
		fmt.Fprintf(stderr, "Backed up %s as %s.\n", path, b)
	}
	target, err := writeAtomic(path, text, 0o600)
	if errors.Is(err, iofs.ErrPermission) {
		return fmt.Errorf("init: %w; name another file with --config", err)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "Wrote %s. Next: edit it (or manifold import --write), manifold check, manifold connect CLIENT.\n", target)
	return nil
}
