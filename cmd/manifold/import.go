package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/manifold-mcp/manifold/internal/clientconf"
	"github.com/manifold-mcp/manifold/internal/config"
	"github.com/manifold-mcp/manifold/internal/configpath"
	"github.com/manifold-mcp/manifold/internal/redact"
)

// cmdImport reads the MCP servers of the user's clients and shows them as
// proxy.toml tables, appended to the config; --write writes them.
func cmdImport(_ context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	var c common
	fs := newFlags("import", "import [CLIENT... | FILE...] [--write] [--config FILE] [--as CLIENT]", levelOneShot, stderr, &c)
	write := fs.Bool("write", false, "write the result into the config (default: only show the change)")
	as := fs.String("as", "", "read every FILE argument as this client's (default: guessed from the file's name and folder)")
	pos, ok, err := parse(fs, args)
	if !ok {
		return err
	}
	env, err := clientconf.OSEnv()
	if err != nil {
		return err
	}
	locs, err := importLocations(pos, *as, env)
	if err != nil {
		return err
	}
	im := clientconf.NewImporter(env)
	var read []string
	for _, loc := range locs {
		data, found, err := readBounded(loc.Path)
		if err != nil {
			fmt.Fprintf(stderr, "manifold import: %v\n", err)
			continue
		}
		if !found {
			continue
		}
		if err := im.Add(loc, data); err != nil {
			fmt.Fprintf(stderr, "manifold import: %v; skipped\n", err)
			continue
		}
		read = append(read, fmt.Sprintf("%s (%s, %s scope)", loc.Path, loc.Client.Title(), loc.Scope))
	}
	if len(read) == 0 {
		return exitError{code: 1, msg: "import: no client file was found or could be read; name a client (" + clientList() + ") or a file"}
	}
	fmt.Fprintf(stderr, "Read %s:\n", count(len(read), "file"))
	for _, r := range read {
		fmt.Fprintf(stderr, "  %s\n", r)
	}
	for _, n := range im.Notes {
		fmt.Fprintf(stderr, "note: %s\n", n)
	}

	// Where serve looks: a new file goes to the user's config folder, as
	// init's does, not to the current folder.
	path, err := configpath.ForWrite(c.config)
	if err != nil {
		return fmt.Errorf("import: find the config folder: %w; name the file with --config", err)
	}
	existing, _, err := readBounded(path)
	if err != nil {
		return err
	}
	m, err := clientconf.Merge(existing, im.Entries())
	if err != nil {
		return exitError{code: 1, msg: "import: " + err.Error()}
	}
	for _, s := range m.Skipped {
		fmt.Fprintf(stderr, "skipped %s\n", s)
	}
	if len(m.Added) == 0 {
		fmt.Fprintf(stdout, "%s already has every server found; nothing to change.\n", path)
		return nil
	}
	// The existing file may hold secrets of its own, shown as context.
	var secrets []string
	if cfg, err := config.Parse(path, existing); err == nil {
		secrets = cfg.Secrets
	}
	red := redact.New(append(secrets, im.Secrets()...)...)
	diff := unifiedDiff(path, path, string(existing), string(m.Text))
	fmt.Fprint(red.Writer(stdout), redactLines(diff))
	var need []string
	for _, e := range m.Added {
		for _, v := range append(e.SetVars, e.Vars...) {
			if _, set := os.LookupEnv(v); !set && !containsStr(need, v) {
				need = append(need, v)
			}
		}
	}
	if len(need) > 0 {
		fmt.Fprintf(stderr, "Set these variables where manifold runs (they are not set here): %s\n", strings.Join(need, ", "))
	}
	if !*write {
		fmt.Fprintf(stderr, "%s: nothing written; run again with --write to add %s.\n", path, count(len(m.Added), "server"))
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	target, err := writeAtomic(path, m.Text, 0o600)
	if err != nil {
		return err
	}
	if abs, err := filepath.Abs(target); err == nil {
		target = abs
	}
	fmt.Fprintf(stderr, "Wrote %s: %s added. Next: manifold check, then manifold connect CLIENT.\n", target, count(len(m.Added), "server"))
	return nil
}

// redactLines hides credential shapes in each line of a diff.
func redactLines(s string) string {
	var b strings.Builder
	for l := range strings.Lines(s) {
		b.WriteString(redact.Shapes(l))
	}
	return b.String()
}

func containsStr(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

func clientList() string {
	names := make([]string, len(clientconf.Clients))
	for i, c := range clientconf.Clients {
		names[i] = string(c)
	}
	return strings.Join(names, ", ")
}

// importLocations turns the arguments into the files to read: every
// client's files when there are none, a client's files for its name, and a
// file for a path (its client guessed, or as).
func importLocations(pos []string, as string, env clientconf.Env) ([]clientconf.Location, error) {
	var forced clientconf.Client
	if as != "" {
		c, err := clientconf.ParseClient(as)
		if err != nil {
			return nil, argError("import", "--as: %v", err)
		}
		forced = c
	}
	if len(pos) == 0 {
		var locs []clientconf.Location
		for _, c := range clientconf.Clients {
			locs = append(locs, clientconf.Locations(c, env)...)
		}
		return locs, nil
	}
	var locs []clientconf.Location
	for _, arg := range pos {
		if st, err := os.Stat(arg); err == nil && !st.IsDir() {
			c := forced
			if c == "" {
				c = clientconf.Guess(arg)
			}
			if c == "" {
				return nil, argError("import", "cannot tell which client %s belongs to; say it with --as CLIENT (%s)", arg, clientList())
			}
			abs, err := filepath.Abs(arg)
			if err != nil {
				return nil, err
			}
			locs = append(locs, clientconf.Location{Client: c, Scope: guessScope(abs, env), Path: abs})
			continue
		}
		c, err := clientconf.ParseClient(arg)
		if err != nil {
			return nil, argError("import", "%v, nor a file", err)
		}
		locs = append(locs, clientconf.Locations(c, env)...)
	}
	return locs, nil
}

// guessScope says whether a file given by path is a project's (it lies in
// a project folder, like .vscode/mcp.json or .mcp.json) or the user's.
func guessScope(path string, env clientconf.Env) clientconf.Scope {
	for _, c := range clientconf.Clients {
		for _, l := range clientconf.Locations(c, env) {
			if l.Path == path {
				return l.Scope
			}
		}
	}
	base, dir := filepath.Base(path), filepath.Base(filepath.Dir(path))
	switch {
	case base == ".mcp.json", dir == ".vscode", dir == ".cursor", dir == ".zed", dir == ".gemini" && filepath.Dir(filepath.Dir(path)) != env.Home,
		dir == ".codex" && filepath.Dir(filepath.Dir(path)) != env.Home:
		return clientconf.ScopeProject
	}
	return clientconf.ScopeUser
}
