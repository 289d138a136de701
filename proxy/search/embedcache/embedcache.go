// Package embedcache holds the sentence embeddings of tool texts for the
// search surface's opt-in encoder ([catalog] encoder = true). Embeddings are
// computed in the background, one text at a time, by the sentence encoder
// (proxy/search/internal/encoder), kept in memory, and kept on disk as one
// small file per text named by the SHA-256 of the model's name and the
// text, so that a search never waits for them and a restart with unchanged
// tools embeds nothing. The encoder's weights are decoded only when a text
// must be embedded.
package embedcache

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/manifold-mcp/manifold/proxy/search/internal/encoder"
)

// modelName names the encoder and its weights in every key: a new model
// never reads another's embeddings.
const modelName = "universal-sentence-encoder-lite/int8/1"

// Defaults of New: at most MaxFiles files on disk (each 8 + 4·512 bytes,
// so about 17 MB) and in memory.
const MaxFiles = 8192

// magic opens every cache file.
var magic = [4]byte{'m', 'f', 'e', '1'}

// fileExt is the cache files' extension; prune removes only such files.
const fileExt = ".emb"

type key [sha256.Size]byte

// Cache computes and keeps embeddings. Its methods are safe for concurrent
// use; Lookup and Ready never block on the model or the disk.
type Cache struct {
	dir   string // "" keeps embeddings in memory only
	max   int
	model func() (func(string) []float32, error) // decodes the encoder at first call
	log   *slog.Logger

	mu       sync.Mutex
	mem      map[key][]float32
	want     map[key]bool // the texts of the last Lookup, kept when mem is trimmed
	queue    []string
	queued   map[key]bool
	running  bool
	closed   bool
	failed   error // the model could not be decoded: lexical search only
	loaded   int   // read from disk since the worker last went idle
	embedded int   // computed since then
	started  time.Time
	done     chan struct{} // closed when the worker has stopped after Close
}

// New returns a cache that keeps its files in dir (created 0700; "" keeps
// embeddings in memory only) and embeds with the sentence encoder.
func New(dir string, log *slog.Logger) *Cache {
	return newCache(dir, MaxFiles, func() (func(string) []float32, error) {
		m, err := encoder.Default()
		if err != nil {
			return nil, err
		}
		return m.Encode, nil
	}, log)
}

func newCache(dir string, max int, model func() (func(string) []float32, error), log *slog.Logger) *Cache {
	return &Cache{dir: dir, max: max, model: sync.OnceValues(model), log: log,
		mem: map[key][]float32{}, queued: map[key]bool{}}
}

func keyOf(text string) key { return sha256.Sum256([]byte(modelName + "\x00" + text)) }

// Lookup returns the embeddings of texts, in their order, if every one is
// ready. Otherwise it returns false and queues the missing ones for the
// background worker, which it starts if idle.
func (c *Cache) Lookup(texts []string) ([][]float32, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.failed != nil || c.closed {
		return nil, false
	}
	c.want = make(map[key]bool, len(texts))
	out := make([][]float32, len(texts))
	missing := false
	for i, t := range texts {
		k := keyOf(t)
		c.want[k] = true
		if v, ok := c.mem[k]; ok {
			out[i] = v
			continue
		}
		missing = true
		if !c.queued[k] {
			c.queued[k] = true
			c.queue = append(c.queue, t)
		}
	}
	if !missing {
		return out, true
	}
	if !c.running {
		c.running, c.started, c.loaded, c.embedded = true, time.Now(), 0, 0
		c.done = make(chan struct{})
		go c.work()
	}
	return nil, false
}

// Encode embeds text now (a query), decoding the encoder at its first use;
// nil if the encoder cannot be decoded.
func (c *Cache) Encode(text string) []float32 {
	enc, err := c.model()
	if err != nil {
		return nil
	}
	return enc(text)
}

// Close stops the worker after the text it is embedding, and waits for it.
func (c *Cache) Close() {
	c.mu.Lock()
	c.closed = true
	done, running := c.done, c.running
	c.mu.Unlock()
	if running {
		<-done
	}
}

// work embeds the queue, one text at a time, until it is empty, then
// prunes the folder if it wrote to it.
func (c *Cache) work() {
	pruned := false
	for {
		c.mu.Lock()
		if len(c.queue) == 0 || c.closed {
			if !c.closed && !pruned && c.embedded > 0 && c.dir != "" {
				c.mu.Unlock()
				c.prune()
				pruned = true
				continue
			}
			c.finish()
			c.mu.Unlock()
			return
		}
		text := c.queue[0]
		c.queue = c.queue[1:]
		c.mu.Unlock()

		k := keyOf(text)
		v, fromDisk := c.read(k)
		if v == nil {
			enc, err := c.model()
			if err != nil {
				c.log.Error("search encoder: the model cannot be decoded; search stays lexical", "err", err)
				c.mu.Lock()
				c.failed = err
				c.queue, c.queued = nil, map[key]bool{}
				c.finish()
				c.mu.Unlock()
				return
			}
			v = enc(text)
			c.write(k, v)
		}
		c.mu.Lock()
		delete(c.queued, k)
		c.mem[k] = v
		if fromDisk {
			c.loaded++
		} else {
			c.embedded++
		}
		if len(c.mem) > c.max {
			for mk := range c.mem {
				if !c.want[mk] {
					delete(c.mem, mk)
				}
			}
		}
		c.mu.Unlock()
	}
}

// finish marks the worker idle and logs what it did (c.mu held).
func (c *Cache) finish() {
	c.running = false
	close(c.done)
	if c.failed == nil && !c.closed {
		c.log.Info("search encoder: embeddings ready", "texts", len(c.mem), "from_cache", c.loaded, "embedded", c.embedded,
			"took", time.Since(c.started).Round(time.Millisecond).String())
	}
}

func (c *Cache) path(k key) string { return filepath.Join(c.dir, hex.EncodeToString(k[:])+fileExt) }

// read returns the embedding of k from disk, or nil when there is none or
// the file is not a valid embedding (then it is removed).
func (c *Cache) read(k key) ([]float32, bool) {
	if c.dir == "" {
		return nil, false
	}
	p := c.path(k)
	b, err := os.ReadFile(p)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			c.log.Warn("search encoder: cannot read a cached embedding; computing it", "file", p, "err", err)
		}
		return nil, false
	}
	v, err := decode(b)
	if err != nil {
		c.log.Warn("search encoder: removing a bad cached embedding", "file", p, "err", err)
		_ = os.Remove(p)
		return nil, false
	}
	now := time.Now()
	_ = os.Chtimes(p, now, now) // recently used files are the last pruned
	return v, true
}

// write stores v under k, atomically (a temporary file renamed), 0600.
func (c *Cache) write(k key, v []float32) {
	if c.dir == "" {
		return
	}
	err := func() error {
		if err := os.MkdirAll(c.dir, 0o700); err != nil {
			return err
		}
		f, err := os.CreateTemp(c.dir, ".tmp-*")
		if err != nil {
			return err
		}
		defer os.Remove(f.Name()) // after the rename, a no-op
		if _, err := f.Write(encode(v)); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
		return os.Rename(f.Name(), c.path(k))
	}()
	if err != nil {
		c.log.Warn("search encoder: cannot cache an embedding on disk; it is kept in memory", "dir", c.dir, "err", err)
	}
}

// prune removes the least recently used cache files past c.max.
func (c *Cache) prune() {
	entries, err := os.ReadDir(c.dir)
	if err != nil {
		return
	}
	type file struct {
		name string
		mod  time.Time
	}
	var files []file
	for _, e := range entries {
		if !e.Type().IsRegular() || !strings.HasSuffix(e.Name(), fileExt) {
			continue
		}
		if info, err := e.Info(); err == nil {
			files = append(files, file{e.Name(), info.ModTime()})
		}
	}
	if len(files) <= c.max {
		return
	}
	slices.SortFunc(files, func(a, b file) int { return a.mod.Compare(b.mod) })
	for _, f := range files[:len(files)-c.max] {
		_ = os.Remove(filepath.Join(c.dir, f.name))
	}
}

// encode is a cache file: magic, the length as uint32, then the values as
// float32, little-endian.
func encode(v []float32) []byte {
	b := make([]byte, 8, 8+4*len(v))
	copy(b, magic[:])
	binary.LittleEndian.PutUint32(b[4:], uint32(len(v)))
	for _, x := range v {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
	}
	return b
}

// decode reads a cache file: it must hold an embedding of the encoder's
// length, finite and of unit length.
func decode(b []byte) ([]float32, error) {
	if len(b) < 8 || [4]byte(b[:4]) != magic {
		return nil, errors.New("not an embedding file")
	}
	n := binary.LittleEndian.Uint32(b[4:])
	if n != encoder.Dims || len(b) != 8+4*int(n) {
		return nil, fmt.Errorf("%d bytes for %d values; want %d values", len(b), n, encoder.Dims)
	}
	v := make([]float32, n)
	var norm float64
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[8+4*i:]))
		if math.IsNaN(float64(v[i])) || math.IsInf(float64(v[i]), 0) {
			return nil, errors.New("a value is not finite")
		}
		norm += float64(v[i]) * float64(v[i])
	}
	if math.Abs(norm-1) > 1e-3 {
		return nil, fmt.Errorf("length %.4f, not a unit vector", math.Sqrt(norm))
	}
	return v, nil
}
