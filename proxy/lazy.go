package proxy

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// This file holds lazy start and idle stop: a server with ServerConfig.Lazy is
// started by the first call that needs it, advertising meanwhile the catalog
// of its last successful listing (kept in a cache file); one with IdleTimeout
// is stopped when nobody has used it for that long, and started again on
// demand. Neither loses a call: the call waits for the start, bounded by the
// server's startup timeout.

// cachedLists is the cache file's content.
type cachedLists struct {
	Tools     []*mcp.Tool             `json:"tools,omitempty"`
	Prompts   []*mcp.Prompt           `json:"prompts,omitempty"`
	Resources []*mcp.Resource         `json:"resources,omitempty"`
	Templates []*mcp.ResourceTemplate `json:"resourceTemplates,omitempty"`
	// What the server said of itself, for the instructions summary.
	Title        string    `json:"title,omitempty"`
	Name         string    `json:"name,omitempty"`
	Instructions string    `json:"instructions,omitempty"`
	Saved        time.Time `json:"saved"`
}

// cachePath is where b's catalog is cached: a file per server, config and
// executable, so that a changed command, argument or environment, or an
// upgraded program, does not advertise another program's tools.
func (s *Server) cachePath(b *backend) string {
	if s.opts.CacheDir == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(fingerprint(b.cfg) + "\x00" + executableID(b.cfg.Upstream.Command)))
	return filepath.Join(s.opts.CacheDir, b.name+"-"+hex.EncodeToString(sum[:6])+".json")
}

// executableID identifies the program command runs: its path as the PATH
// finds it, its size and modification time ("" for a remote server, or a
// command that is not found).
func executableID(command string) string {
	if command == "" {
		return ""
	}
	path, err := exec.LookPath(command)
	if err != nil {
		return ""
	}
	fi, err := os.Stat(path)
	if err != nil {
		return path
	}
	return fmt.Sprintf("%s %d@%d", path, fi.Size(), fi.ModTime().UnixNano())
}

// saveCatalog writes b's lists and what it said of itself to its cache
// file, atomically: a lazy server advertises the lists until it runs, and
// every server is described by them in the instructions summary until it is
// up. A file whose content would not change is left as it is.
func (s *Server) saveCatalog(b *backend, l lists, about serverAbout) {
	path := s.cachePath(b)
	if path == "" {
		return
	}
	c := cachedLists{Tools: l.tools, Prompts: l.prompts, Resources: l.resources, Templates: l.templates,
		Title: about.title, Name: about.name, Instructions: about.instructions, Saved: time.Now().UTC()}
	data, err := json.Marshal(c)
	if err != nil {
		return
	}
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(unsaved(old), unsaved(data)) {
		return
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		b.log.Warn("cannot cache the catalog", "err", err)
		return
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		b.log.Warn("cannot cache the catalog", "err", err)
		return
	}
	if err := os.Rename(tmp, path); err != nil {
		b.log.Warn("cannot cache the catalog", "err", err)
	}
}

// unsaved is a cache file's content up to its time of writing, the last
// member ("saved" is the last field of cachedLists; an object's keys inside
// the lists are before it, and no string holds an unescaped quote).
func unsaved(data []byte) []byte {
	if i := bytes.LastIndex(data, []byte(`"saved":`)); i >= 0 {
		return data[:i]
	}
	return data
}

// loadCatalog reads b's cached lists and what it said of itself; ok is
// false when there are none.
func (s *Server) loadCatalog(b *backend) (lists, serverAbout, bool) {
	path := s.cachePath(b)
	if path == "" {
		return lists{}, serverAbout{}, false
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return lists{}, serverAbout{}, false
	}
	var c cachedLists
	if err := json.Unmarshal(data, &c); err != nil {
		b.log.Warn("ignoring an unreadable catalog cache", "file", path, "err", err)
		return lists{}, serverAbout{}, false
	}
	// The file is the proxy's own, but bound what it says as if the
	// server said it.
	about := serverAbout{title: bound(c.Title, maxAboutField), name: bound(c.Name, maxAboutField),
		instructions: bound(c.Instructions, maxAboutInstructions), tools: c.Tools, known: true}
	return lists{tools: c.Tools, prompts: c.Prompts, resources: c.Resources, templates: c.Templates}, about, true
}

// adoptCache gives b, not listed yet, its cached catalog. It reports
// whether b has one (adopted now or before) and whether it was adopted now
// (the caller then rebuilds the catalog). Until it is up, the server is
// described as it was (summary.go) and advertised with its last catalog: a
// client that lists once, right after initialize, sees every server it saw
// before. Calls wait for the start (ensureUp); a live listing that differs
// corrects the catalog, with list_changed.
func (s *Server) adoptCache(b *backend) (has, now bool) {
	b.mu.Lock()
	adopted := b.fromCache
	b.mu.Unlock()
	if adopted {
		return true, false
	}
	cached, about, ok := s.loadCatalog(b)
	if !ok {
		return false, false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.listed { // listed live meanwhile
		return true, false
	}
	b.about = about
	b.lists, b.listed, b.fromCache = cached, true, true
	return true, true
}

// toolCount is the number of tools b lists.
func (b *backend) toolCount() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.lists.tools)
}

// touch records that b was used now.
func (b *backend) touch() { b.lastUsed.Store(time.Now().UnixNano()) }

// wake asks b's supervisor to start it, if it waits for a first use.
func (b *backend) wake() {
	select {
	case b.wakeCh <- struct{}{}:
	default:
	}
}

// ensureUp starts b if it is idle (lazy, or stopped for idleness) and waits,
// bounded by its startup timeout and ctx, until it is up or its start failed.
// A server still starting (its tools advertised from its cached catalog) is
// waited for the same way.
func (s *Server) ensureUp(ctx context.Context, b *backend) {
	b.touch()
	st, _, _ := b.snapshot()
	switch st {
	case stateIdle:
		b.wake()
	case stateStarting:
	default:
		return
	}
	limit := b.cfg.Upstream.StartupTimeout
	if limit <= 0 {
		limit = 30 * time.Second
	}
	deadline := time.NewTimer(limit + time.Second)
	defer deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
		case <-deadline.C:
			return
		case <-ctx.Done():
			return
		case <-s.closed:
			return
		}
		if st, _, _ := b.snapshot(); st != stateIdle && st != stateStarting {
			return
		}
	}
}

// waitForUse blocks until b is woken by a call (true) or stopped (false).
// Meanwhile b is idle: its tools stay listed from the last listing.
func (s *Server) waitForUse(b *backend) bool {
	b.mu.Lock()
	if b.state != stateStopped {
		b.state = stateIdle
	}
	b.up = nil
	b.mu.Unlock()
	b.woken.Store(false)
	select {
	case <-b.wakeCh:
		b.mu.Lock()
		if b.state == stateIdle {
			b.state = stateStarting
		}
		b.mu.Unlock()
		b.woken.Store(true)
		return true
	case <-s.closed:
		return false
	case <-b.quit:
		return false
	}
}

// goIdle takes b out of service if it has had no call in flight and no use
// for its idle timeout, and reports whether it did. The check and the change
// of state are one step under b.mu: a call touches b before it takes its
// snapshot (ensureUp), so a call either makes the check fail or finds b idle
// and wakes it; none is sent to the process that is being stopped.
func (b *backend) goIdle() bool {
	if b.cfg.IdleTimeout <= 0 {
		return false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state != stateUp || len(b.busy) > 0 || time.Since(time.Unix(0, b.lastUsed.Load())) < b.cfg.IdleTimeout {
		return false
	}
	b.state, b.up = stateIdle, nil
	return true
}
