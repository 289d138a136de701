package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/manifold-mcp/manifold/internal/config"
	"github.com/manifold-mcp/manifold/proxy"
)

// watchConfig reloads the proxy when the config file changes (polled every
// interval: editors that replace the file are seen too) or on SIGHUP, until ctx
// ends. An invalid new config is logged with all its problems and the running
// one keeps serving.
func watchConfig(ctx context.Context, p *proxy.Server, cfg *config.Config, interval time.Duration, log *slog.Logger) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	path, globs := cfg.Path, cfg.PolicyFiles // the policy files of the config in force
	last := configSum(path, globs)
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
			sum := configSum(path, globs)
			if bytes.Equal(sum, last) {
				continue
			}
			why = "config or policy file changed"
		}
		last = configSum(path, globs)
		cfg, err := config.Load(path)
		if err != nil {
			log.Error("reload: the new config is invalid; the previous one keeps serving", "reason", why, "problems", err.Error())
			continue
		}
		if err := p.Reload(proxyOptions(cfg, log).Servers); err != nil {
			log.Error("reload failed; the previous config keeps serving", "reason", why, "err", err)
			continue
		}
		p.SetPolicy(cfg.Policy)
		globs = cfg.PolicyFiles
		last = configSum(path, globs)
		log.Info("reloaded the config", "reason", why, "file", cfg.Path, "servers", len(cfg.Servers))
	}
}

// configSum hashes the config file and the policy files its globs match now,
// so that an edit of any of them is seen without parsing anything.
func configSum(path string, globs []string) []byte {
	h := sha256.New()
	h.Write(fileSum(path))
	for _, g := range globs {
		matches, _ := filepath.Glob(g)
		for _, m := range matches {
			h.Write([]byte(m))
			h.Write(fileSum(m))
		}
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
