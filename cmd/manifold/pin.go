package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/manifold-mcp/manifold/internal/config"
	"github.com/manifold-mcp/manifold/proxy"
	"github.com/manifold-mcp/manifold/proxy/pin"
)

// The lock file (lock_file, manifold.lock beside proxy.toml) holds the
// upstream definitions a person approved; package pin has its format. It is
// read at start and on every change (watchConfig), written by a serving
// manifold for definitions trusted on first use and by `manifold approve`.
// A lock file that cannot be read or parsed fails closed: manifold does not
// start with it, and a running one keeps the lock it had.

// readLock reads the lock file at path; a missing file is an empty lock,
// and so is none (path "": a config read from a pipe, config.ReadOnce).
func readLock(path string) (*pin.Lock, error) {
	if path == "" {
		return pin.NewLock(), nil
	}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return pin.NewLock(), nil
	}
	if err != nil {
		return nil, fmt.Errorf("lock file: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, pin.MaxLockBytes+1))
	if err != nil {
		return nil, fmt.Errorf("lock file %s: %w", path, err)
	}
	l, err := pin.Parse(path, b)
	if err != nil {
		return nil, fmt.Errorf("%w\n(the lock file of approved definitions: fix or delete the lines named, then run `manifold approve` to review the servers' definitions again)", err)
	}
	return l, nil
}

// writeLock adds entries to the lock file at path, keeping every other
// entry, by writing a new file beside it and renaming it over the old one.
// The file is read again first, so that entries written meanwhile (another
// manifold, an approve) are kept; if it no longer parses, nothing is
// written.
func writeLock(path string, entries []pin.Entry) error {
	if path == "" {
		return errNoLockFile
	}
	l, err := readLock(path)
	if err != nil {
		return err
	}
	l = l.With(entries...)
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("write the lock file: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(l.Format()); err != nil {
		tmp.Close()
		return fmt.Errorf("write the lock file: %w", err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return fmt.Errorf("write the lock file: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write the lock file: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write the lock file: %w", err)
	}
	return nil
}

// errNoLockFile is writeLock's error for a config without a lock file.
var errNoLockFile = errors.New(`no lock file: the config was read from a pipe (such as --config <(…)), which has none of its own; set lock_file = "/path/to/manifold.lock" in the config`)

// pinning reports whether any server of cfg pins its definitions.
func pinning(cfg *config.Config) bool {
	for _, s := range cfg.Servers {
		if s.Pin != config.PinOff {
			return true
		}
	}
	return false
}

// pending is one definition awaiting review, of one server.
type pending struct {
	Server string
	proxy.PinReview
}

// pendingOf lists the reviews in sts, once each (several instances of one
// config report the same ones).
func pendingOf(sts []proxy.ServerStatus) []pending {
	seen := map[string]bool{}
	var out []pending
	for _, st := range sts {
		for _, r := range st.Review {
			k := st.Name + "\x00" + r.Kind + "\x00" + r.Name + "\x00" + r.Sum
			if seen[k] {
				continue
			}
			seen[k] = true
			out = append(out, pending{st.Name, r})
		}
	}
	return out
}

// printReview prints one review: what, why, the diff and the command.
func printReview(w io.Writer, p pending) {
	what := fmt.Sprintf("%s %q", p.Kind, p.Name)
	if p.Kind == string(pin.Instructions) {
		what = "instructions"
	}
	if p.Exposed != "" && p.Exposed != p.Name {
		what += fmt.Sprintf(" (exposed as %s)", p.Exposed)
	}
	state := "hidden until approved"
	if !p.Held {
		state = "served, flagged (pin = \"warn\")"
	}
	fmt.Fprintf(w, "server %s, %s: %s; %s\n", p.Server, what, p.Change, state)
	for _, f := range p.Findings {
		fmt.Fprintf(w, "  ! %s\n", f)
	}
	if p.Change == "changed" {
		fmt.Fprintln(w, "  --- approved\n  +++ listed now")
	}
	for _, l := range strings.Split(strings.TrimSuffix(p.Diff, "\n"), "\n") {
		fmt.Fprintf(w, "  %s\n", l)
	}
	fmt.Fprintf(w, "  accept: %s\n", p.Approve(p.Server))
}

// printReviews prints what awaits review, for status.
func printReviews(w io.Writer, sts []proxy.ServerStatus) {
	ps := pendingOf(sts)
	if len(ps) == 0 {
		return
	}
	fmt.Fprintf(w, "\n%s awaiting review (pinned definitions):\n", count(len(ps), "definition"))
	for _, p := range ps {
		printReview(w, p)
	}
}

// cmdApprove shows the definitions that await review and accepts those
// named into the lock file. The reviews come from the running instances of
// the config (their status files), from --url, or, when none runs, from the
// config's servers started for the purpose.
func cmdApprove(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	var c common
	fs := newFlags("approve", "approve [--config FILE] [--url URL] [--all] [-n] [SERVER[/NAME]]", levelOneShot, stderr, &c)
	url := fs.String("url", "", "base URL of a running `manifold serve --http` instance whose reviews to accept (its /status)")
	all := fs.Bool("all", false, "accept every definition that awaits review (without it, no argument only lists them)")
	dry := fs.Bool("n", false, "dry run: show what would be accepted, write nothing")
	fs.BoolVar(dry, "dry-run", false, "same as -n")
	fresh := fs.Bool("fresh", false, "start the config's servers to see their definitions, even if a manifold serving it runs")
	pos, ok, err := parse(fs, args)
	if !ok {
		return err
	}
	if len(pos) > 1 {
		return argError("approve", "too many arguments %q; give one SERVER or SERVER/NAME", pos)
	}
	cfg, err := loadConfig(c)
	if err != nil {
		return err
	}
	if _, err := readLock(cfg.LockFile); err != nil {
		return err // fails closed: a lock file that does not parse is not rewritten
	}
	var sts []proxy.ServerStatus
	source := ""
	running := runningInstances(cfg.Path)
	switch {
	case *url != "":
		if sts, err = fetchStatus(ctx, *url); err != nil {
			return err
		}
		source = "the manifold at " + *url
	case !*fresh && len(running) > 0:
		for _, inst := range running {
			sts = append(sts, inst.Servers...)
		}
		source = fmt.Sprintf("the running manifold (pid %d)", running[0].PID)
		if len(running) > 1 {
			source = fmt.Sprintf("%d running manifolds", len(running))
		}
	default:
		c.oneShot = true
		p, err := startReady(ctx, c, stderr)
		if err != nil {
			return err
		}
		sts = p.Status()
		_ = p.Close()
		source = "the servers, started to list their definitions"
	}
	ps := pendingOf(sts)
	if len(pos) == 0 && !*all {
		if len(ps) == 0 {
			fmt.Fprintf(stdout, "Nothing awaits review (asked %s; lock file %s).\n", source, cfg.LockFile)
			return nil
		}
		fmt.Fprintf(stdout, "%s awaiting review (asked %s):\n\n", count(len(ps), "definition"), source)
		for _, p := range ps {
			printReview(stdout, p)
			fmt.Fprintln(stdout)
		}
		fmt.Fprintln(stdout, "Accept one with `manifold approve SERVER/NAME`, a server's with `manifold approve SERVER`, all of them with `manifold approve --all`.")
		return nil
	}
	var chosen []pending
	if len(pos) == 1 {
		server, name, one := strings.Cut(pos[0], "/")
		for _, p := range ps {
			if p.Server != server {
				continue
			}
			if one && name != p.Name && name != p.Exposed && !(p.Kind == string(pin.Instructions) && name == "instructions") {
				continue
			}
			chosen = append(chosen, p)
		}
		if len(chosen) == 0 {
			msg := fmt.Sprintf("%s: nothing of that awaits review (asked %s)", pos[0], source)
			if len(ps) > 0 {
				var names []string
				for _, p := range ps {
					names = append(names, strings.TrimSuffix(strings.TrimPrefix(p.Approve(p.Server), "manifold approve "), "/"))
				}
				msg += "; awaiting review: " + strings.Join(names, ", ")
			}
			return exitError{code: 1, msg: msg}
		}
	} else {
		chosen = ps
	}
	var entries []pin.Entry
	for _, p := range chosen {
		printReview(stdout, p)
		fmt.Fprintln(stdout)
		key := pin.Key{Server: p.Server, Kind: pin.Kind(p.Kind), Name: p.Name}
		var e pin.Entry
		if p.Masked {
			// The definition held a secret of the config: the lock gets
			// the masked form and the fingerprint of the true text.
			e, err = pin.NewMaskedEntry(key, p.Sum, p.Definition)
		} else {
			e, err = pin.NewEntry(key, p.Definition)
			if err == nil && e.Sum != p.Sum {
				err = fmt.Errorf("%s: the fingerprint %s does not match the definition (%s)", key, p.Sum, e.Sum)
			}
		}
		if err != nil {
			return fmt.Errorf("%s reported a definition that cannot be approved: %w; run `manifold approve --fresh` to list the definitions again", source, err)
		}
		entries = append(entries, e)
	}
	if *dry {
		fmt.Fprintf(stdout, "Dry run: %s would be accepted into %s; nothing was written.\n", count(len(entries), "definition"), cfg.LockFile)
		return nil
	}
	if err := writeLock(cfg.LockFile, entries); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "Accepted %s into %s. A manifold serving %s picks the change up within a second, without a restart.\n",
		count(len(entries), "definition"), cfg.LockFile, cfg.Path)
	return nil
}
