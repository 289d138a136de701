package supervise

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
	segjson "github.com/segmentio/encoding/json"
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
func (b *Backend) cachePath() string {
	if b.rt.CacheDir == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(b.cfg.CacheKey + "\x00" + executableID(b.cfg.Upstream.Command)))
	return filepath.Join(b.rt.CacheDir, b.name+"-"+hex.EncodeToString(sum[:6])+".json")
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
func (b *Backend) saveCatalog(l Lists, about About) {
	path := b.cachePath()
	if path == "" {
		return
	}
	c := cachedLists{Tools: l.Tools, Prompts: l.Prompts, Resources: l.Resources, Templates: l.Templates,
		Title: about.Title, Name: about.Name, Instructions: about.Instructions, Saved: time.Now().UTC()}
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
func (b *Backend) loadCatalog() (Lists, About, bool) {
	path := b.cachePath()
	if path == "" {
		return Lists{}, About{}, false
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return Lists{}, About{}, false
	}
	var c cachedLists
	// segmentio's decoder, the one the go-sdk reads servers' lists with:
	// twice as fast as encoding/json here (~1.7 ms of a start with 20 × 50
	// tools, issue 41 part 5), and what it reads from a file saveCatalog
	// wrote is the same (TestCacheDecodersAgree, FuzzCacheDecodersAgree).
	if err := segjson.Unmarshal(data, &c); err != nil {
		b.log.Warn("ignoring an unreadable catalog cache", "file", path, "err", err)
		return Lists{}, About{}, false
	}
	// The file is the proxy's own, but bound what it says as if the
	// server said it.
	about := About{Title: bound(c.Title, maxAboutField), Name: bound(c.Name, maxAboutField),
		Instructions: bound(c.Instructions, MaxAboutInstructions), Tools: c.Tools, Known: true}
	return Lists{Tools: c.Tools, Prompts: c.Prompts, Resources: c.Resources, Templates: c.Templates}, about, true
}

// AdoptCache gives b, not listed yet, its cached catalog. It reports
// whether b has one (adopted now or before) and whether it was adopted now
// (the caller then rebuilds the catalog). Until it is up, the server is
// described as it was (AboutNow) and advertised with its last catalog: a
// client that lists once, right after initialize, sees every server it saw
// before. Calls wait for the start (EnsureUp); a live listing that differs
// corrects the catalog, with list_changed.
func (b *Backend) AdoptCache() (has, now bool) {
	b.mu.Lock()
	adopted := b.fromCache
	b.mu.Unlock()
	if adopted {
		return true, false
	}
	cached, about, ok := b.loadCatalog()
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
func (b *Backend) toolCount() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.lists.Tools)
}

// touch records that b was used now.
func (b *Backend) touch() { b.lastUsed.Store(time.Now().UnixNano()) }

// wake asks b's supervisor to start it, if it waits for a first use.
func (b *Backend) wake() {
	select {
	case b.wakeCh <- struct{}{}:
	default:
	}
}

// EnsureUp starts b if it is idle (lazy, or stopped for idleness) and waits,
// bounded by its startup timeout and ctx, until it is up or its start failed.
// A server still starting (its tools advertised from its cached catalog) is
// waited for the same way.
func (b *Backend) EnsureUp(ctx context.Context) {
	b.touch()
	st, _, _ := b.Snapshot()
	switch st {
	case StateIdle:
		b.wake()
	case StateStarting:
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
		case <-b.rt.Closed:
			return
		}
		if st, _, _ := b.Snapshot(); st != StateIdle && st != StateStarting {
			return
		}
	}
}

// waitForUse blocks until b is woken by a call (true) or stopped (false).
// Meanwhile b is idle: its tools stay listed from the last listing.
func (b *Backend) waitForUse() bool {
	b.mu.Lock()
	if b.state != StateStopped {
		b.state = StateIdle
	}
	b.up = nil
	b.mu.Unlock()
	b.woken.Store(false)
	select {
	case <-b.wakeCh:
		b.mu.Lock()
		if b.state == StateIdle {
			b.state = StateStarting
		}
		b.mu.Unlock()
		b.woken.Store(true)
		return true
	case <-b.rt.Closed:
		return false
	case <-b.quit:
		return false
	}
}

// goIdle takes b out of service if it has had no call in flight and no use
// for its idle timeout, and reports whether it did. The check and the change
// of state are one step under b.mu: a call touches b before it takes its
// snapshot (EnsureUp), so a call either makes the check fail or finds b idle
// and wakes it; none is sent to the process that is being stopped.
func (b *Backend) goIdle() bool {
	if b.cfg.IdleTimeout <= 0 {
		return false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state != StateUp || len(b.busy) > 0 || time.Since(time.Unix(0, b.lastUsed.Load())) < b.cfg.IdleTimeout {
		return false
	}
	b.state, b.up = StateIdle, nil
	return true
}
