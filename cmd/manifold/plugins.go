package main

import (
	"fmt"
	"log/slog"
	"maps"
	"slices"

	"github.com/manifold-mcp/manifold/internal/config"
	"github.com/manifold-mcp/manifold/plugins"
	"github.com/manifold-mcp/manifold/proxy"
	"github.com/manifold-mcp/manifold/upstream"
)

// pluginServers maps the config's plugins onto upstreams that the proxy
// dials in-process: each plugin's tools reach the proxy through the same path
// as a server's. A plugin runs in the config's folder. log may be nil.
func pluginServers(cfg *config.Config, log *slog.Logger) []proxy.ServerConfig {
	out := make([]proxy.ServerConfig, 0, len(cfg.Plugins))
	for _, p := range cfg.Plugins {
		env := make([]string, 0, len(p.Env))
		for _, k := range slices.Sorted(maps.Keys(p.Env)) {
			env = append(env, k+"="+p.Env[k])
		}
		host := plugins.NewHost(plugins.Options{
			Name:    p.Name,
			Command: p.Command,
			Args:    p.Args,
			Env:     env,
			Dir:     cfg.Dir,
			SHA256:  p.SHA256,
			Logger:  log,
		})
		out = append(out, proxy.ServerConfig{
			Upstream: upstream.Options{
				Name:           p.Name,
				Dial:           host.Dial,
				StartupTimeout: p.StartupTimeout,
			},
			Prefix:      p.Prefix,
			Required:    p.Required,
			CallTimeout: p.CallTimeout,
			// A reload keeps a plugin whose config did not change running.
			Fingerprint: fmt.Sprintf("plugin %+v", p),
		})
	}
	return out
}
