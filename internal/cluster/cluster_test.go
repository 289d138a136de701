package cluster

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/google/go-cmp/cmp"

	"github.com/manifold-mcp/manifold/policy"
	"github.com/manifold-mcp/manifold/proxy"
)

// syncBuffer is a log sink safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

func newStore(t *testing.T, failOpen bool) (*Store, *miniredis.Miniredis, *syncBuffer) {
	t.Helper()
	m := miniredis.RunT(t)
	m.SetTime(time.Date(2026, 12, 1, 20, 0, 0, 0, time.UTC))
	logs := &syncBuffer{}
	s, err := New(Options{URL: "redis://" + m.Addr() + "/0", KeyPrefix: "test:", FailOpen: failOpen, Timeout: time.Second,
		Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s, m, logs
}

// TestTake drives a bucket of 3 per minute on Redis's clock: 3 pass, the
// 4th waits for one interval (20s), and passes once Redis's clock has moved
// by it; a changed rate starts full.
func TestTake(t *testing.T) {
	s, m, _ := newStore(t, false)
	rate := policy.Rate{N: 3, Per: time.Minute}
	var waits []time.Duration
	for range 4 {
		w, err := s.Take(t.Context(), "web__search", rate)
		if err != nil {
			t.Fatal(err)
		}
		waits = append(waits, w)
	}
	if diff := cmp.Diff([]time.Duration{0, 0, 0, 20 * time.Second}, waits); diff != "" {
		t.Errorf("waits (-want +got):\n%s", diff)
	}
	m.SetTime(time.Date(2026, 12, 1, 20, 0, 19, 0, time.UTC))
	if w, _ := s.Take(t.Context(), "web__search", rate); w != time.Second {
		t.Errorf("after 19s: wait %s, want 1s", w)
	}
	m.SetTime(time.Date(2026, 12, 1, 20, 0, 20, 0, time.UTC))
	if w, _ := s.Take(t.Context(), "web__search", rate); w != 0 {
		t.Errorf("after 20s: wait %s, want none", w)
	}
	if w, _ := s.Take(t.Context(), "other", rate); w != 0 {
		t.Errorf("another key: wait %s, want none", w)
	}
	if w, _ := s.Take(t.Context(), "web__search", policy.Rate{N: 5, Per: time.Minute}); w != 0 {
		t.Errorf("a changed rate: wait %s, want none (a new bucket)", w)
	}
}

// TestLedger checks the spend ledger's window on Redis's clock, and that
// the times it returns are on this process's clock.
func TestLedger(t *testing.T) {
	s, m, _ := newStore(t, false)
	t0 := time.Date(2026, 12, 1, 20, 0, 0, 0, time.UTC)
	for i, amount := range []float64{40, 2.5, 7} {
		m.SetTime(t0.Add(time.Duration(i) * 10 * time.Minute))
		if err := s.Add(t.Context(), "k", amount, time.Time{}); err != nil {
			t.Fatal(err)
		}
	}
	m.SetTime(t0.Add(65 * time.Minute)) // the first spend has left a window of 1h
	before := time.Now()
	got, err := s.Since(t.Context(), "k", time.Now().Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	var amounts []float64
	for _, sp := range got {
		amounts = append(amounts, sp.Amount)
	}
	if diff := cmp.Diff([]float64{2.5, 7}, amounts); diff != "" {
		t.Errorf("amounts (-want +got):\n%s", diff)
	}
	if len(got) == 2 {
		// 55 and 45 minutes ago on Redis's clock, whatever this clock says.
		if age := before.Sub(got[0].At); age < 54*time.Minute || age > 56*time.Minute {
			t.Errorf("the first spend is %s old, want 55m", age)
		}
	}
	if got, _ := s.Since(t.Context(), "none", time.Now().Add(-time.Hour)); got != nil {
		t.Errorf("an unknown key has spends %v", got)
	}
}

// TestApprovals checks an approval's life: offered (twice: the first id is
// kept), not redeemable before it is granted, granted once, redeemed once.
func TestApprovals(t *testing.T) {
	s, _, _ := newStore(t, false)
	ctx := t.Context()
	exp := time.Now().Add(time.Minute).Truncate(time.Millisecond)
	id, gotExp, err := s.Offer(ctx, "ap-1", "digest", []byte(`{"id":"ap-1"}`), exp)
	if err != nil || id != "ap-1" || !gotExp.Equal(exp) {
		t.Fatalf("Offer = %q, %s, %v; want ap-1, %s", id, gotExp, err, exp)
	}
	if id, _, _ := s.Offer(ctx, "ap-2", "digest", []byte(`{}`), exp.Add(time.Minute)); id != "ap-1" {
		t.Errorf("a second Offer for the same call = %q, want the waiting ap-1", id)
	}
	if _, ok, err := s.Redeem(ctx, "digest"); ok || err != nil {
		t.Errorf("Redeem before the grant = %v, %v; want false", ok, err)
	}
	if v, err := s.View(ctx, "ap-1"); err != nil || string(v) != `{"id":"ap-1"}` {
		t.Errorf("View = %s, %v", v, err)
	}
	if _, err := s.Grant(ctx, "ap-2"); !errors.Is(err, ErrNoApproval) {
		t.Errorf("Grant of an id that does not wait: %v, want ErrNoApproval", err)
	}
	if ok, err := s.Grant(ctx, "ap-1"); !ok || err != nil {
		t.Fatalf("Grant = %v, %v", ok, err)
	}
	if ok, err := s.Grant(ctx, "ap-1"); ok || err != nil {
		t.Errorf("a second Grant = %v, %v; want false (granted already)", ok, err)
	}
	if _, ok, _ := s.Redeem(ctx, "other"); ok {
		t.Error("another call's digest redeemed the approval")
	}
	if id, ok, err := s.Redeem(ctx, "digest"); !ok || err != nil || id != "ap-1" {
		t.Fatalf("Redeem = %q, %v, %v; want ap-1", id, ok, err)
	}
	if _, ok, _ := s.Redeem(ctx, "digest"); ok {
		t.Error("an approval was redeemed twice")
	}
	if _, err := s.View(ctx, "ap-1"); !errors.Is(err, ErrNoApproval) {
		t.Errorf("View after the redeem: %v, want ErrNoApproval", err)
	}
}

// TestDown checks the fail modes while Redis is down: closed refuses with
// ErrSharedUnavailable, open admits rate limits and spend caps (never
// approvals); each transition is logged once, not per call.
func TestDown(t *testing.T) {
	for _, failOpen := range []bool{false, true} {
		t.Run(map[bool]string{false: "closed", true: "open"}[failOpen], func(t *testing.T) {
			s, m, logs := newStore(t, failOpen)
			rate := policy.Rate{N: 1, Per: time.Hour}
			if _, err := s.Take(t.Context(), "k", rate); err != nil {
				t.Fatal(err)
			}
			m.Close()
			for range 3 {
				w, err := s.Take(t.Context(), "k", rate)
				if failOpen && (w != 0 || err != nil) {
					t.Errorf("open: Take = %s, %v; want admitted", w, err)
				}
				if !failOpen && !errors.Is(err, proxy.ErrSharedUnavailable) {
					t.Errorf("closed: Take error = %v, want ErrSharedUnavailable", err)
				}
				_, err = s.Since(t.Context(), "k", time.Now().Add(-time.Hour))
				if failOpen != (err == nil) {
					t.Errorf("Since error = %v with fail open %v", err, failOpen)
				}
				if _, _, err := s.Redeem(t.Context(), "d"); !errors.Is(err, proxy.ErrSharedUnavailable) {
					t.Errorf("Redeem error = %v, want ErrSharedUnavailable whatever the mode", err)
				}
			}
			if n := strings.Count(logs.String(), "Redis cannot be reached"); n != 1 {
				t.Errorf("the outage was logged %d times, want once:\n%s", n, logs)
			}
			if err := m.Restart(); err != nil {
				t.Fatal(err)
			}
			w, err := s.Take(t.Context(), "k", rate)
			if err != nil || w == 0 {
				t.Errorf("after the restart: Take = %s, %v; want the bucket kept (refused with a wait)", w, err)
			}
			if n := strings.Count(logs.String(), "reachable again"); n != 1 {
				t.Errorf("the return was logged %d times, want once:\n%s", n, logs)
			}
		})
	}
}
