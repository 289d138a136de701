package embedcache

import (
	"bytes"
	"encoding/hex"
	"errors"
	"hash/fnv"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/manifold-mcp/manifold/proxy/search/internal/encoder"
)

// fakeVector is a unit vector of the encoder's length that depends on text.
func fakeVector(text string) []float32 {
	h := fnv.New32a()
	h.Write([]byte(text))
	v := make([]float32, encoder.Dims)
	v[int(h.Sum32())%encoder.Dims] = 1
	return v
}

// countingModel embeds with fakeVector and counts the texts it embedded.
func countingModel(n *atomic.Int32) func() (func(string) []float32, error) {
	return func() (func(string) []float32, error) {
		return func(s string) []float32 { n.Add(1); return fakeVector(s) }, nil
	}
}

// settle waits for the worker to go idle, if it runs.
func settle(c *Cache) {
	c.mu.Lock()
	done, running := c.done, c.running
	c.mu.Unlock()
	if running {
		<-done
	}
}

func testLog(b *bytes.Buffer) *slog.Logger { return slog.New(slog.NewTextHandler(b, nil)) }

var texts = []string{"read file. Read a file.", "list directory. List a folder.", "create issue. Open an issue."}

func TestLookupComputesInBackgroundThenCaches(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "embed")
	var n atomic.Int32
	var logs bytes.Buffer
	c := newCache(dir, MaxFiles, countingModel(&n), testLog(&logs))
	if _, ok := c.Lookup(texts); ok {
		t.Fatal("first Lookup: ready before anything was embedded")
	}
	settle(c)
	got, ok := c.Lookup(texts)
	if !ok {
		t.Fatal("Lookup after the worker went idle: not ready")
	}
	for i, text := range texts {
		if diff := cmp.Diff(fakeVector(text), got[i]); diff != "" {
			t.Errorf("embedding of %q (-want +got):\n%s", text, diff)
		}
	}
	if n.Load() != int32(len(texts)) {
		t.Errorf("embedded %d texts, want %d", n.Load(), len(texts))
	}
	if !strings.Contains(logs.String(), "embeddings ready") || !strings.Contains(logs.String(), "embedded=3") {
		t.Errorf("log lacks the ready line with embedded=3:\n%s", logs.String())
	}
	info, err := os.Stat(dir)
	if err != nil || info.Mode().Perm() != 0o700 {
		t.Fatalf("cache folder: %v, mode %v; want 0700", err, info.Mode().Perm())
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*"+fileExt))
	if len(files) != len(texts) {
		t.Fatalf("%d cache files, want %d: %v", len(files), len(texts), files)
	}
	for _, f := range files {
		if info, err := os.Stat(f); err != nil || info.Mode().Perm() != 0o600 || info.Size() != 8+4*encoder.Dims {
			t.Errorf("%s: %v, mode %v, %d bytes; want 0600 and %d bytes", f, err, info.Mode().Perm(), info.Size(), 8+4*encoder.Dims)
		}
	}

	// A restart with the same texts reads them all from disk.
	var n2 atomic.Int32
	logs.Reset()
	c2 := newCache(dir, MaxFiles, countingModel(&n2), testLog(&logs))
	if _, ok := c2.Lookup(texts); ok {
		t.Fatal("a new cache is ready before its worker read the disk")
	}
	settle(c2)
	if got2, ok := c2.Lookup(texts); !ok || !cmp.Equal(got, got2) {
		t.Errorf("after a restart: ready %v, same embeddings %v", ok, cmp.Equal(got, got2))
	}
	if n2.Load() != 0 {
		t.Errorf("after a restart with unchanged texts, %d were embedded again; want 0", n2.Load())
	}
	if !strings.Contains(logs.String(), "from_cache=3") {
		t.Errorf("log lacks from_cache=3:\n%s", logs.String())
	}
}

func TestBadCacheFilesAreRecomputed(t *testing.T) {
	dir := t.TempDir()
	nan := encode(fakeVector("x"))
	copy(nan[8:], []byte{0, 0, 0xc0, 0x7f}) // a NaN
	long := encode(append(fakeVector("x"), 0))
	for name, content := range map[string][]byte{
		"garbage":     []byte("not an embedding"),
		"empty":       nil,
		"nan":         nan,
		"wrong dims":  long,
		"not unit":    encode(make([]float32, encoder.Dims)),
		"other magic": append([]byte("xxxx"), encode(fakeVector("x"))[4:]...),
	} {
		t.Run(name, func(t *testing.T) {
			text := "tool " + name
			if err := os.WriteFile(filepath.Join(dir, hexKey(text)+fileExt), content, 0o600); err != nil {
				t.Fatal(err)
			}
			var n atomic.Int32
			var logs bytes.Buffer
			c := newCache(dir, MaxFiles, countingModel(&n), testLog(&logs))
			c.Lookup([]string{text})
			settle(c)
			got, ok := c.Lookup([]string{text})
			if !ok || n.Load() != 1 || !cmp.Equal(got[0], fakeVector(text)) {
				t.Errorf("ready %v, embedded %d (want 1), right vector %v", ok, n.Load(), ok && cmp.Equal(got[0], fakeVector(text)))
			}
			if !strings.Contains(logs.String(), "removing a bad cached embedding") {
				t.Errorf("log lacks the bad file:\n%s", logs.String())
			}
			if b, err := os.ReadFile(filepath.Join(dir, hexKey(text)+fileExt)); err != nil || !bytes.Equal(b, encode(fakeVector(text))) {
				t.Errorf("the bad file was not rewritten: %v", err)
			}
		})
	}
}

func hexKey(text string) string {
	k := keyOf(text)
	return hex.EncodeToString(k[:])
}

func TestPruneKeepsTheBound(t *testing.T) {
	dir := t.TempDir()
	var n atomic.Int32
	c := newCache(dir, 2, countingModel(&n), slog.New(slog.DiscardHandler))
	if err := os.WriteFile(filepath.Join(dir, "unrelated.txt"), []byte("keep me"), 0o600); err != nil {
		t.Fatal(err)
	}
	c.Lookup([]string{"a", "b", "c", "d", "e"})
	settle(c)
	files, _ := filepath.Glob(filepath.Join(dir, "*"+fileExt))
	if len(files) != 2 {
		t.Errorf("%d cache files after 5 texts with a bound of 2; want 2", len(files))
	}
	if _, err := os.Stat(filepath.Join(dir, "unrelated.txt")); err != nil {
		t.Errorf("prune removed a file that is not the cache's: %v", err)
	}
	if len(c.mem) > 5 {
		t.Errorf("%d embeddings in memory", len(c.mem))
	}
}

func TestLookupNeverWaitsForTheModel(t *testing.T) {
	release := make(chan struct{})
	var once sync.Once
	c := newCache("", MaxFiles, func() (func(string) []float32, error) {
		<-release // the model is slow to decode
		return fakeVector, nil
	}, slog.New(slog.DiscardHandler))
	defer once.Do(func() { close(release) })
	for range 3 {
		if _, ok := c.Lookup(texts); ok {
			t.Fatal("ready while the model is still decoding")
		}
	}
	once.Do(func() { close(release) })
	settle(c)
	if _, ok := c.Lookup(texts); !ok {
		t.Error("not ready once the model decoded and the worker went idle")
	}
}

func TestModelFailureStaysLexical(t *testing.T) {
	var logs bytes.Buffer
	c := newCache(t.TempDir(), MaxFiles, func() (func(string) []float32, error) {
		return nil, errors.New("bad weights")
	}, testLog(&logs))
	c.Lookup(texts)
	settle(c)
	if _, ok := c.Lookup(texts); ok {
		t.Error("ready without a model")
	}
	if c.Encode("query") != nil {
		t.Error("Encode without a model returned a vector")
	}
	if !strings.Contains(logs.String(), "bad weights") || !strings.Contains(logs.String(), "stays lexical") {
		t.Errorf("log lacks the failure:\n%s", logs.String())
	}
}

func TestCloseStopsTheWorker(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	var calls atomic.Int32
	c := newCache("", MaxFiles, func() (func(string) []float32, error) {
		return func(s string) []float32 {
			if calls.Add(1) == 1 {
				close(started)
				<-release
			}
			return fakeVector(s)
		}, nil
	}, slog.New(slog.DiscardHandler))
	c.Lookup(texts)
	<-started // the worker is embedding the first text
	closed := make(chan struct{})
	go func() { c.Close(); close(closed) }()
	for i := 0; ; i++ {
		c.mu.Lock()
		isClosed := c.closed
		c.mu.Unlock()
		if isClosed {
			break
		}
		if i == 10000 {
			t.Fatal("Close did not mark the cache closed")
		}
		time.Sleep(time.Millisecond)
	}
	close(release)
	<-closed
	if got := calls.Load(); got != 1 {
		t.Errorf("the worker embedded %d texts; Close should stop it after the first", got)
	}
	if _, ok := c.Lookup(texts); ok {
		t.Error("ready after Close")
	}
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	v := make([]float32, encoder.Dims)
	v[0], v[1] = float32(math.Sqrt(0.5)), -float32(math.Sqrt(0.5))
	got, err := decode(encode(v))
	if err != nil || !cmp.Equal(v, got) {
		t.Errorf("decode(encode(v)) = %v, %v", err, cmp.Equal(v, got))
	}
}
