package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/manifold-mcp/manifold/internal/config"
	"github.com/manifold-mcp/manifold/internal/spawn"
	"github.com/manifold-mcp/manifold/proxy"
)

// A serving manifold publishes its servers' status in a small file, so that
// `manifold status` can show a running instance that a client started over
// stdio (it has no other way in): runDir()/PID.json, checked every second,
// rewritten when it changed and at least every statusHeartbeat, and removed
// at exit. A file whose process is gone, or that is stale (older than
// staleStatus), is ignored.

// statusHeartbeat is the longest a live instance leaves its status file
// unwritten; staleStatus the age at which a reader ignores one.
const (
	statusHeartbeat = 10 * time.Second
	staleStatus     = 30 * time.Second
)

// instanceStatus is the content of a status file.
type instanceStatus struct {
	PID     int                  `json:"pid"`
	Config  string               `json:"config"`
	Mode    string               `json:"mode"` // "stdio" or "http ADDR"
	Started time.Time            `json:"started"`
	Updated time.Time            `json:"updated"`
	Servers []proxy.ServerStatus `json:"servers"`
	// Clients are the connected clients, with the catalog mode each got;
	// Catalog is the catalog's size in each mode.
	Clients []proxy.ClientStatus `json:"clients"`
	Catalog *proxy.CatalogSize   `json:"catalog,omitempty"`
	// Names are the exposed tool names a client gets in each mode, for
	// doctor's check of what each connected client would mangle.
	Names *instanceNames `json:"names,omitempty"`
	// RestartNeeded says what a reload could not apply (what is read at
	// start only, such as [cluster]); empty when nothing.
	RestartNeeded string `json:"restart_needed,omitempty"`
}

// instanceNames are the tool names of a full and of a search-mode list.
type instanceNames struct {
	Full   []string `json:"full"`
	Search []string `json:"search"`
}

// runDir is where status files live; empty when there is no cache folder.
func runDir() string {
	if d := cacheDir(); d != "" {
		return filepath.Join(d, "run")
	}
	return ""
}

// startPublishing publishes p's status until the returned func is called,
// which removes the file and waits.
func startPublishing(ctx context.Context, p *proxy.Server, config, mode string, notes *notices) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		publishStatus(ctx, p, config, mode, time.Second, notes)
	}()
	return func() { cancel(); <-done }
}

// publishStatus writes p's status file every interval until ctx ends, then
// removes it; notes (may be nil) adds what reloads could not apply.
func publishStatus(ctx context.Context, p *proxy.Server, config, mode string, interval time.Duration, notes *notices) {
	dir := runDir()
	if dir == "" || os.MkdirAll(dir, 0o700) != nil {
		return
	}
	path := filepath.Join(dir, strconv.Itoa(os.Getpid())+".json")
	defer os.Remove(path)
	st := instanceStatus{PID: os.Getpid(), Config: config, Mode: mode, Started: time.Now().UTC()}
	t := time.NewTicker(interval)
	defer t.Stop()
	var last []byte // the file's content as compared: no time of writing, no uptimes
	var written time.Time
	for {
		servers := p.Status()
		st.Servers = make([]proxy.ServerStatus, len(servers))
		for i, sv := range servers {
			sv.Uptime = 0 // it changes at every check; the reader adds the file's age
			st.Servers[i] = sv
		}
		st.Updated = time.Time{}
		size := p.CatalogSize()
		st.Clients, st.Catalog = p.Clients(), &size
		full, search := p.ListedNames()
		st.Names = &instanceNames{Full: full, Search: search}
		st.RestartNeeded = notes.restart()
		if st.Clients == nil {
			st.Clients = []proxy.ClientStatus{}
		}
		// Rewritten when it changed, and at least every statusHeartbeat
		// (readers take a file older than staleStatus for a dead one's).
		key, err := json.Marshal(st)
		if err == nil && (!bytes.Equal(key, last) || time.Since(written) >= statusHeartbeat) {
			st.Servers, st.Updated = servers, time.Now().UTC()
			if b, err := json.Marshal(st); err == nil {
				tmp := path + ".tmp"
				if os.WriteFile(tmp, b, 0o600) == nil && os.Rename(tmp, path) == nil {
					last, written = key, st.Updated
				}
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// runningInstances reads the status files of live instances serving config
// (an absolute path), removing those of processes that are gone. A config
// named by a file descriptor (--config <(…)) has none: its name is every
// pipe's, and would match instances of other configs.
func runningInstances(cfgPath string) []instanceStatus {
	dir := runDir()
	if dir == "" || config.IsDescriptor(cfgPath) {
		return nil
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	var out []instanceStatus
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		var st instanceStatus
		if json.Unmarshal(b, &st) != nil || st.PID <= 0 {
			continue
		}
		if !spawn.Alive(st.PID) { // the process is gone
			_ = os.Remove(f)
			continue
		}
		age := time.Since(st.Updated)
		if st.Config != cfgPath || age > staleStatus {
			continue
		}
		for i := range st.Servers {
			if st.Servers[i].State == "up" && age > 0 { // up then, and since
				st.Servers[i].Uptime += age
			}
		}
		out = append(out, st)
	}
	return out
}
