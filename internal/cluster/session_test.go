package cluster

import (
	"errors"
	"testing"
	"time"

	"github.com/manifold-mcp/manifold/proxy"
)

// TestSessions: a record put is read back, a touch extends it past its
// first expiry, it expires after the ttl with no touch, and a delete ends
// it at once; Redis down is ErrSharedUnavailable, never "no session".
func TestSessions(t *testing.T) {
	s, m, _ := newStore(t, false)
	ctx := t.Context()
	if err := s.PutSession(ctx, "S1", []byte(`{"uid":0}`), time.Minute); err != nil {
		t.Fatalf("PutSession: %v", err)
	}
	if rec, ok, err := s.GetSession(ctx, "S1"); err != nil || !ok || string(rec) != `{"uid":0}` {
		t.Fatalf("GetSession = %q, %v, %v; want the record", rec, ok, err)
	}
	if !m.Exists("test:session:S1") {
		t.Errorf("the record is not under the key prefix: %v", m.Keys())
	}
	m.FastForward(50 * time.Second)
	if ok, err := s.TouchSession(ctx, "S1", time.Minute); err != nil || !ok {
		t.Fatalf("TouchSession = %v, %v; want true", ok, err)
	}
	m.FastForward(50 * time.Second) // past the first expiry, within the touched one
	if _, ok, _ := s.GetSession(ctx, "S1"); !ok {
		t.Errorf("the touched record expired at its first ttl")
	}
	m.FastForward(11 * time.Second)
	if _, ok, err := s.GetSession(ctx, "S1"); ok || err != nil {
		t.Errorf("GetSession after the ttl = %v, %v; want no session", ok, err)
	}
	if ok, err := s.TouchSession(ctx, "S1", time.Minute); ok || err != nil {
		t.Errorf("TouchSession of an expired record = %v, %v; want false", ok, err)
	}
	_ = s.PutSession(ctx, "S2", []byte(`{}`), time.Minute)
	if err := s.DeleteSession(ctx, "S2"); err != nil {
		t.Fatalf("DeleteSession: %v", err)
	}
	if _, ok, _ := s.GetSession(ctx, "S2"); ok {
		t.Errorf("the deleted record is still there")
	}
	m.Close()
	if _, ok, err := s.GetSession(ctx, "S1"); ok || !errors.Is(err, proxy.ErrSharedUnavailable) {
		t.Errorf("GetSession with Redis down = %v, %v; want ErrSharedUnavailable", ok, err)
	}
}
