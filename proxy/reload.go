package proxy

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/manifold-mcp/manifold/proxy/naming"
)

// generation is one configured set of servers. It is immutable; Reload builds
// a new one and swaps it in (Server.gen). A backend whose config did not change
// is carried over into the new generation, process and all.
type generation struct {
	backends []*backend          // in config order
	byName   map[string]*backend // server name -> backend
	uris     *naming.URIMap      // resource URI rewriting
	// desc holds each server's ServerConfig.Description in this
	// generation: a kept backend's cfg is the one it was started with, so a
	// reload that changes only a description keeps the process and the new
	// text lives here.
	desc map[string]string
	// pin holds each server's ServerConfig.Pin in this generation, for
	// the same reason: a reload that changes only the pin mode keeps the
	// process, and the new mode applies at once.
	pin map[string]PinMode
}

// description returns the configured description of b's server in g.
func (g *generation) description(b *backend) string { return g.desc[b.name] }

// newGeneration validates servers and builds a generation, reusing the
// backends of old whose config is unchanged.
func (s *Server) newGeneration(servers []ServerConfig, old *generation) (*generation, error) {
	g := &generation{byName: make(map[string]*backend), desc: make(map[string]string), pin: make(map[string]PinMode)}
	var errs []error
	prefixes := make(map[string]string)
	for i := range servers {
		sc := servers[i]
		name := sc.Upstream.Name
		if name == "" {
			errs = append(errs, fmt.Errorf("server %d: empty name", i))
			continue
		}
		if _, dup := g.byName[name]; dup {
			errs = append(errs, fmt.Errorf("server %q: defined twice", name))
			continue
		}
		if sc.Prefix != "" {
			if other, ok := prefixes[sc.Prefix]; ok {
				errs = append(errs, fmt.Errorf("servers %q and %q: both use prefix %q; give one of them another prefix", other, name, sc.Prefix))
			}
			prefixes[sc.Prefix] = name
		}
		if sc.CallTimeout == 0 {
			sc.CallTimeout = s.opts.CallTimeout
		}
		b := (*backend)(nil)
		if old != nil {
			if ob := old.byName[name]; ob != nil && sameConfig(ob.cfg, sc) {
				b = ob
			}
		}
		if b == nil {
			b = s.newBackend(name, sc)
		}
		g.backends = append(g.backends, b)
		g.byName[name] = b
		g.desc[name] = sc.Description
		g.pin[name] = sc.Pin
	}
	var us []naming.URIServer
	for _, b := range g.backends {
		us = append(us, naming.URIServer{Server: b.name, Prefix: b.cfg.Prefix})
	}
	uris, err := naming.NewURIMap(us)
	if err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	g.uris = uris
	return g, nil
}

// sameConfig reports whether a server's config is unchanged, so that a reload
// keeps its process. The description is not compared: it changes what the
// proxy says about the server, not the server (see generation.desc).
func sameConfig(a, b ServerConfig) bool {
	if a.Fingerprint != "" || b.Fingerprint != "" {
		return a.Fingerprint == b.Fingerprint
	}
	if (a.Upstream.Dial == nil) != (b.Upstream.Dial == nil) || a.Upstream.Dial != nil {
		return false // functions cannot be compared: set Fingerprint
	}
	return fingerprint(a) == fingerprint(b)
}

func fingerprint(c ServerConfig) string {
	u := c.Upstream
	b, err := json.Marshal(struct {
		Name, Command, Dir, URL, Transport string
		Args, Env                          []string
		Headers                            map[string]string
		StartupTimeout, StopGrace          time.Duration
		MaxMessageBytes                    int
		Prefix                             string
		Required, Instructions, Lazy, Iso  bool
		IdleTimeout                        time.Duration
		CallTimeout                        time.Duration
		Restart                            RestartPolicy
		Health                             *HealthCheck
		Protocol                           string
		ProbeTimeout                       time.Duration
	}{u.Name, u.Command, u.Dir, u.URL, u.Transport, u.Args, u.Env, u.Headers, u.StartupTimeout, u.StopGrace,
		u.MaxMessageBytes, c.Prefix, c.Required, c.Instructions, c.Lazy, c.PerSession, c.IdleTimeout, c.CallTimeout, c.Restart, c.Health,
		u.Protocol, u.ProbeTimeout})
	if err != nil {
		return fmt.Sprintf("%p", &c) // never equal
	}
	return string(b)
}

// Reload applies a new server list without restarting the proxy or dropping
// clients: servers added start, removed ones stop, changed ones restart, and
// unchanged ones keep their process. The catalog follows and clients get
// list_changed. An invalid list is rejected with its errors and the current
// one keeps serving.
func (s *Server) Reload(servers []ServerConfig) error {
	s.reloadMu.Lock()
	defer s.reloadMu.Unlock()
	if s.isClosed() {
		return errors.New("proxy is closed")
	}
	old := s.gen.Load()
	g, err := s.newGeneration(servers, old)
	if err != nil {
		return fmt.Errorf("reload rejected, the previous config keeps serving: %w", err)
	}
	kept := make(map[*backend]bool, len(g.backends))
	for _, b := range g.backends {
		kept[b] = true
	}
	var gone []*backend
	for _, b := range old.backends {
		if !kept[b] {
			gone = append(gone, b)
		}
	}
	s.gen.Store(g)
	var wg sync.WaitGroup
	for _, b := range gone {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b.log.Info("server removed or changed by reload; stopping it")
			_ = b.Close()
		}()
	}
	wg.Wait()
	if s.run.started {
		for _, b := range g.backends {
			if !inGen(old, b) {
				b.log.Info("server added or changed by reload; starting it")
				_ = b.Launch()
			}
		}
	}
	s.rebuild()
	s.log.Info("config reloaded", "servers", len(g.backends), "stopped", len(gone))
	return nil
}

func inGen(g *generation, b *backend) bool { return g.byName[b.name] == b }
