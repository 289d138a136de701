package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/manifold-mcp/manifold/internal/clientconf"
	"github.com/manifold-mcp/manifold/internal/config"
	"github.com/manifold-mcp/manifold/internal/redact"
)

// backupMark separates a client file's name from the time of its backup.
const backupMark = ".manifold-backup-"

// absentMark ends the name of the backup of a file that did not exist:
// undo removes the file.
const absentMark = ".absent"

// cmdConnect adds Manifold as one entry of a client's configuration, or
// with --undo puts the file back as it was before the last connect.
func cmdConnect(_ context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	var c common
	fs := newFlags("connect", "connect CLIENT [--scope user|project] [--replace] [--http URL] [--undo] [--yes] [--config FILE]", levelOneShot, stderr, &c)
	replace := fs.Bool("replace", false, "also remove from the client the entries of servers that proxy.toml already has (manifold import brought them over)")
	httpURL := fs.String("http", "", "write a remote entry for Manifold serving streamable HTTP at this URL (manifold serve --http) instead of a stdio one")
	undo := fs.Bool("undo", false, "restore the client's file as it was before the last connect (byte for byte), from its backup")
	yes := fs.Bool("yes", false, "write without asking")
	scope := fs.String("scope", "user", "which of the client's files: user (every project) or project (the current folder's)")
	name := fs.String("name", "manifold", "the name of Manifold's entry in the client")
	alwaysLoad := fs.Bool("always-load", false, "Claude Code: alwaysLoad, every tool of Manifold always in the prompt instead of behind tool search")
	modern := fs.Bool("modern", false, "Codex: speak MCP 2026-07-28 with Manifold (turns on Codex's feature mcp_2026_07_28, under development in Codex, and sets the entry's CODEX_MCP_PROTOCOL_VERSION)")
	pos, ok, err := parse(fs, args)
	if !ok {
		return err
	}
	if len(pos) != 1 {
		return argError("connect", "name one client: %s", clientList())
	}
	client, err := clientconf.ParseClient(pos[0])
	if err != nil {
		return argError("connect", "%v", err)
	}
	env, err := clientconf.OSEnv()
	if err != nil {
		return err
	}
	loc, err := connectLocation(client, clientconf.Scope(*scope), env)
	if err != nil {
		return err
	}
	target, err := writeTarget(loc.Path)
	if err != nil {
		return err
	}
	if target != loc.Path {
		fmt.Fprintf(stderr, "%s is a symlink to %s; that file is the one changed.\n", loc.Path, target)
	}
	if *undo {
		return undoConnect(client, loc, target, env, *yes, stdin, stdout, stderr)
	}

	if *modern && client != clientconf.Codex {
		return argError("connect", "--modern is for Codex; %s chooses its protocol version itself", client.Title())
	}
	s := clientconf.Server{Name: *name, URL: *httpURL, AlwaysLoad: *alwaysLoad, Modern: *modern}
	if s.URL == "" {
		cfgPath, err := filepath.Abs(config.Path(c.config))
		if err != nil {
			return err
		}
		cfg, err := config.Load(cfgPath)
		if err != nil {
			if errors.Is(err, config.ErrNoConfig) {
				return exitError{code: 1, msg: fmt.Sprintf("connect: %s does not exist; create it first (manifold import --write, or manifold init), or name another with --config", cfgPath)}
			}
			return exitError{code: 1, msg: "connect: the config does not load; fix it first (manifold check):\n" + err.Error()}
		}
		bin, err := selfPath()
		if err != nil {
			return err
		}
		s.Command, s.Args = bin, []string{"serve", "--config", cfgPath}
		s.CallTimeout = cfg.CallTimeout
		for _, srv := range cfg.Servers {
			s.CallTimeout = max(s.CallTimeout, srv.CallTimeout)
		}
	}
	data, _, err := readBounded(target)
	if err != nil {
		return err
	}
	var remove []string
	if *replace {
		if remove, err = replaceable(loc, data, c.config, env); err != nil {
			return err
		}
	}
	out, err := clientconf.Connect(client, data, s, remove)
	if err != nil {
		return exitError{code: 1, msg: fmt.Sprintf("connect: %s: %v", target, err)}
	}
	if string(out) == string(data) {
		fmt.Fprintf(stdout, "%s: Manifold is already its entry %q; nothing to change.\n", target, s.Name)
		return nil
	}
	fmt.Fprint(redact.New(fileSecrets(loc, data, env)...).Writer(stdout), redactLines(unifiedDiff(target, target, string(data), string(out))))
	if len(remove) > 0 {
		fmt.Fprintf(stderr, "Removed from %s, since proxy.toml has them: %s\n", client.Title(), strings.Join(remove, ", "))
	}
	if !*yes && !confirm(stdin, stderr, fmt.Sprintf("Write %s?", target)) {
		fmt.Fprintf(stderr, "%s: nothing written; run again with --yes to write.\n", target)
		return nil
	}
	backup, err := backupFile(target, data)
	if err != nil {
		return err
	}
	if _, err := writeAtomic(target, out, 0o600); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "Connected %s: %s (backup %s; undo with manifold connect --undo %s)\n", client.Title(), target, backup, client)
	if hint := connectHint(client, s); hint != "" {
		fmt.Fprintln(stderr, hint)
	}
	return nil
}

// fileSecrets are the inline secrets of a client's file, to be hidden in
// what shows it.
func fileSecrets(loc clientconf.Location, data []byte, env clientconf.Env) []string {
	im := clientconf.NewImporter(env)
	_ = im.Add(loc, data)
	return im.Secrets()
}

// connectHint is what the user does next in client c, given the entry s.
func connectHint(c clientconf.Client, s clientconf.Server) string {
	switch c {
	case clientconf.Codex:
		if !s.Modern {
			return "Codex speaks the initialize era (2025-06-18) with Manifold; manifold connect codex --modern opts it into 2026-07-28 (a Codex feature still under development)."
		}
	case clientconf.ClaudeDesktop, clientconf.Cursor, clientconf.Windsurf, clientconf.Zed, clientconf.VSCode:
		return "Restart " + c.Title() + " (or reload its MCP servers) to start Manifold."
	case clientconf.Gemini:
		return "Gemini CLI starts MCP servers only in folders you trust (/permissions, or ~/.gemini/trustedFolders.json)."
	}
	return ""
}

// connectLocation is the file connect changes: the client's file of that
// scope.
func connectLocation(c clientconf.Client, scope clientconf.Scope, env clientconf.Env) (clientconf.Location, error) {
	var scopes []string
	for _, l := range clientconf.Locations(c, env) {
		if l.Scope == scope {
			return l, nil
		}
		scopes = append(scopes, string(l.Scope))
	}
	return clientconf.Location{}, argError("connect", "%s has no %s scope; use --scope %s", c.Title(), scope, strings.Join(scopes, " or "))
}

// replaceable returns the entries of the client's file (at its own scope)
// whose servers the config already has.
func replaceable(loc clientconf.Location, data []byte, cfgFlag string, env clientconf.Env) ([]string, error) {
	cfg, _, err := readBounded(config.Path(cfgFlag))
	if err != nil || len(data) == 0 {
		return nil, err
	}
	im := clientconf.NewImporter(env)
	if err := im.Add(loc, data); err != nil {
		return nil, fmt.Errorf("connect --replace: %w", err)
	}
	var here []clientconf.Entry
	for _, e := range im.Entries() {
		if e.Sources[0].Scope == loc.Scope {
			here = append(here, e)
		}
	}
	return clientconf.InConfig(cfg, here)
}

// selfPath is the absolute path of the running manifold binary, symlinks
// resolved: what a client without PATH can start.
func selfPath() (string, error) {
	p, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("find the manifold binary: %w", err)
	}
	if r, err := filepath.EvalSymlinks(p); err == nil {
		p = r
	}
	return p, nil
}

// confirm asks question on w and reads the answer from r: only "y" or
// "yes" is yes; end of input is no.
func confirm(r io.Reader, w io.Writer, question string) bool {
	fmt.Fprintf(w, "%s [y/N] ", question)
	line, _ := bufio.NewReader(r).ReadString('\n')
	a := strings.ToLower(strings.TrimSpace(line))
	return a == "y" || a == "yes"
}

// backupFile saves data, the current contents of path (nil: it does not
// exist), next to it under a name that says when. It never overwrites a
// file or follows a link: the name is created new.
func backupFile(path string, data []byte) (string, error) {
	_, err := os.Stat(path)
	absent := errors.Is(err, fs.ErrNotExist)
	perm := fs.FileMode(0o600)
	if st, err := os.Stat(path); err == nil {
		perm = st.Mode().Perm() & 0o600
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", err
	}
	stamp := time.Now().UTC()
	for range 100 {
		name := path + backupMark + stamp.Format("20060102T150405.000000000Z")
		if absent {
			name += absentMark
		}
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm|0o200)
		if errors.Is(err, fs.ErrExist) {
			stamp = stamp.Add(time.Microsecond)
			continue
		}
		if err != nil {
			return "", fmt.Errorf("back up %s: %w", path, err)
		}
		_, werr := f.Write(data)
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			os.Remove(name)
			return "", fmt.Errorf("back up %s: %w", path, werr)
		}
		return name, nil
	}
	return "", fmt.Errorf("back up %s: no free backup name", path)
}

// backups lists the backups of path, oldest first.
func backups(path string) ([]string, error) {
	dir, base := filepath.Dir(path), filepath.Base(path)
	ents, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), base+backupMark) && e.Type().IsRegular() {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	slices.Sort(out)
	return out, nil
}

// undoConnect restores path from its newest backup, byte for byte, and
// removes that backup (so that undoing again goes one connect further back).
func undoConnect(client clientconf.Client, loc clientconf.Location, path string, env clientconf.Env, yes bool, stdin io.Reader, stdout, stderr io.Writer) error {
	list, err := backups(path)
	if err != nil {
		return err
	}
	if len(list) == 0 {
		return exitError{code: 1, msg: fmt.Sprintf("connect --undo: %s has no backup (%s*) to restore", path, filepath.Base(path)+backupMark)}
	}
	b := list[len(list)-1]
	cur, exists, err := readBounded(path)
	if err != nil {
		return err
	}
	var old []byte
	absent := strings.HasSuffix(b, absentMark)
	if !absent {
		if old, _, err = readBounded(b); err != nil {
			return err
		}
	}
	red := redact.New(append(fileSecrets(loc, cur, env), fileSecrets(loc, old, env)...)...)
	fmt.Fprint(red.Writer(stdout), redactLines(unifiedDiff(path, path, string(cur), string(old))))
	if absent {
		fmt.Fprintf(stderr, "%s did not exist before; undo removes it.\n", path)
	}
	if !yes && !confirm(stdin, stderr, fmt.Sprintf("Restore %s?", path)) {
		if !readerIsTerminal(stdin) {
			// Nobody could answer: a script or a client asked for an undo
			// that did not happen.
			fmt.Fprintln(stderr)
			return exitError{code: 1, msg: fmt.Sprintf("connect --undo: %s: nothing restored: there is no terminal to ask; run again with --yes to restore", path)}
		}
		fmt.Fprintf(stderr, "%s: nothing restored; run again with --yes to restore.\n", path)
		return nil
	}
	switch {
	case absent && exists:
		if err := os.Remove(path); err != nil {
			return err
		}
	case !absent:
		if _, err := writeAtomic(path, old, 0o600); err != nil {
			return err
		}
	}
	if err := os.Remove(b); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "Restored %s for %s from %s.\n", path, client.Title(), filepath.Base(b))
	return nil
}
