package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/manifold-mcp/manifold/internal/config"
	"github.com/manifold-mcp/manifold/proxy"
)

// watchConfig reloads the proxy when the config file, a policy file or a
// file that a ${file:} reference read changes (polled every interval:
// editors that replace the file are seen too, and so is a rotated secret) or
// on SIGHUP, until ctx ends. An invalid new config is logged with all its problems and the running
// one keeps serving.
//
// Policy files fail closed: a policy_files glob that matched files and now
// matches none (the only policy file was deleted or renamed) would drop its
// rules and show what they hid, so while the config file itself is
// unchanged the previous rules keep serving and the reload is logged as an
// error. Changing the config file (or restoring a file) accepts the new
// state. A policy file that cannot be read or parsed keeps the previous
// rules too (config.Load fails).
//
// The API keys file (auth.api_keys_file) is watched too; onReload, if not
// nil, gets each config that was put in force (to swap the API keys).
//
// What is read at start only ([cluster]: the shared store) is not applied
// by a reload: a reload that changes it logs a warning that a restart is
// needed and records it in notes (shown by `manifold status`), until a
// later reload puts it back as it was at start.
//
// A config mounted from a Kubernetes ConfigMap (files that are symlinks
// into ..data, swapped atomically to a new generation) is seen like any
// edit: every file is read through its path on each poll.
func watchConfig(ctx context.Context, p *proxy.Server, cfg *config.Config, interval time.Duration, log *slog.Logger, onReload func(*config.Config), notes *notices) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	if cfg.ReadOnce {
		// Read again, a pipe is empty: a reload would stop every server.
		log.Info("the config came through a pipe and cannot be read again: changes to it and to the files it names apply at the next start, not by reload", "config", cfg.Path)
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				log.Warn("reload: not done; the config came through a pipe and cannot be read again. Restart manifold to apply a new config", "reason", "SIGHUP", "config", cfg.Path)
			}
		}
	}
	path, globs := cfg.Path, watched(cfg) // the policy (and API keys) files of the config in force
	secrets := cfg.SecretFiles            // and its secret files
	inForce := fileSum(path)              // the config file in force
	matched := matchingGlobs(globs)       // its globs that matched files
	lockFile := cfg.LockFile              // the lock file of approved definitions (pin.go)
	last := configSum(path, slices.Concat(globs, []string{lockFile}), secrets)
	started := cfg // what is read at start only comes from it
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		why := ""
		select {
		case <-ctx.Done():
			return
		case <-hup:
			why = "SIGHUP"
		case <-t.C:
			sum := configSum(path, slices.Concat(globs, []string{lockFile}), secrets)
			if bytes.Equal(sum, last) {
				continue
			}
			why = "config, policy, lock or secret file changed"
		}
		last = configSum(path, slices.Concat(globs, []string{lockFile}), secrets)
		cfg, err := config.Load(path)
		if err != nil {
			log.Error("reload: the new config is invalid; the previous one keeps serving", "reason", why, "problems", err.Error())
			continue
		}
		lock, err := readLock(cfg.LockFile)
		if err != nil {
			log.Error("reload: the lock file is invalid; the previous config and approved definitions keep serving (fail closed)", "reason", why, "problems", err.Error())
			continue
		}
		sum := fileSum(path)
		if emptied := emptiedGlobs(cfg.PolicyFiles, matched); len(emptied) > 0 && bytes.Equal(sum, inForce) {
			log.Error("reload: a policy_files glob that matched files matches none now; the previous rules keep serving (fail closed). Restore the policy file, or edit the config file to accept the change",
				"reason", why, "globs", emptied, "config", path)
			continue
		}
		p.Redactor().Add(cfg.Secrets...) // before the new servers can log or fail
		if err := p.Reload(proxyOptions(cfg, log).Servers); err != nil {
			log.Error("reload failed; the previous config keeps serving", "reason", why, "err", err)
			continue
		}
		p.SetLock(lock)
		p.SetPolicy(cfg.Policy)
		p.SetCatalog(catalogOptions(cfg.Catalog))
		p.SetLeftOut(leftOut(cfg))
		logLeftOut(log, cfg)
		if onReload != nil {
			onReload(cfg)
		}
		globs, lockFile, secrets = watched(cfg), cfg.LockFile, cfg.SecretFiles
		inForce, matched = sum, matchingGlobs(globs)
		last = configSum(path, slices.Concat(globs, []string{lockFile}), secrets)
		log.Info("reloaded the config", "reason", why, "file", cfg.Path, "servers", len(cfg.Servers))
		restart := restartNeeded(started, cfg)
		if restart != notes.restart() {
			if restart != "" {
				log.Warn("reload: restart needed: "+restart, "file", cfg.Path)
			} else {
				log.Info("reload: what is read at start only is as it was at start again; no restart needed", "file", cfg.Path)
			}
			notes.setRestart(restart)
		}
	}
}

// restartNeeded says what of now differs from the config the process
// started with in what only a restart applies; "" when nothing does. It
// names the table, never its values (the Redis URL holds a password).
//
// [cluster] is read at start only: swapping the shared store under running
// calls would drop the approvals waiting in the old Redis and restart every
// rate limit and spend cap, while a rolling restart moves each replica over
// whole (each drains first).
func restartNeeded(start, now *config.Config) string {
	if start.Cluster != now.Cluster {
		return "[cluster] changed since start and is read at start only: the shared store (Redis) in use is still the one the process started with; restart manifold to apply the change (in Kubernetes: kubectl rollout restart)"
	}
	return ""
}

// notices is what a serving instance tells `manifold status` besides its
// servers. A nil *notices records nothing.
type notices struct {
	mu         sync.Mutex
	restartMsg string // guarded by mu; see restartNeeded
}

func (n *notices) setRestart(s string) {
	if n == nil {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.restartMsg = s
}

func (n *notices) restart() string {
	if n == nil {
		return ""
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.restartMsg
}

// watched returns the files besides the config file whose changes reload it:
// the policy files' globs and the API keys file.
func watched(cfg *config.Config) []string {
	if cfg.Auth.APIKeysFile == "" {
		return cfg.PolicyFiles
	}
	return append(slices.Clone(cfg.PolicyFiles), cfg.Auth.APIKeysFile)
}

// matchingGlobs returns the globs (patterns with metacharacters) that match
// at least one file now.
func matchingGlobs(globs []string) map[string]bool {
	out := make(map[string]bool)
	for _, g := range globs {
		if !strings.ContainsAny(g, `*?[\`) {
			continue
		}
		if m, _ := filepath.Glob(g); len(m) > 0 {
			out[g] = true
		}
	}
	return out
}

// emptiedGlobs returns the globs that were in had and match no file now.
func emptiedGlobs(globs []string, had map[string]bool) []string {
	now := matchingGlobs(globs)
	var out []string
	for _, g := range globs {
		if had[g] && !now[g] {
			out = append(out, g)
		}
	}
	return out
}

// configSum hashes the config file, the policy files its globs match now and
// the secret files it read, so that an edit of any of them is seen without
// parsing anything. A secret file is read as the config reads it
// (config.ReadSecretFile), so a path that became a FIFO does not block.
func configSum(path string, globs []string, secrets []config.SecretFile) []byte {
	h := sha256.New()
	h.Write(fileSum(path))
	for _, g := range globs {
		matches, _ := filepath.Glob(g)
		for _, m := range matches {
			h.Write([]byte(m))
			h.Write(fileSum(m))
		}
	}
	for _, f := range secrets {
		v, err := config.ReadSecretFile(f.Path)
		if err != nil {
			v = "\x00" + err.Error() // unreadable: a state of its own
		}
		s := sha256.Sum256([]byte(v))
		h.Write([]byte(f.Path))
		h.Write(s[:])
	}
	return h.Sum(nil)
}

// fileSum is the hash of the file's content, nil if it cannot be read.
func fileSum(path string) []byte {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	s := sha256.Sum256(b)
	return s[:]
}
