package era

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var (
	testNow = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	testB   = Binding{Method: "tools/call", Name: "fx__ask", Upstream: "fx", Principal: "session:abc"}
)

func testSealer(t *testing.T, key string) *Sealer {
	t.Helper()
	s, err := NewSealer([]byte(key))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSealOpenRoundTrip(t *testing.T) {
	s := testSealer(t, "0123456789abcdef0123456789abcdef")
	for _, st := range []State{
		{Kind: Parked, Binding: testB, Expires: testNow.Add(time.Minute), Call: "c1", Round: 3},
		{Kind: Wrapped, Binding: testB, Expires: testNow.Add(time.Second), Inner: "upstream's own state \u00e9"},
	} {
		tok, err := s.Seal(st)
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.Open(tok, testB, testNow)
		if err != nil {
			t.Fatalf("Open(%q): %v", tok, err)
		}
		if diff := cmp.Diff(st, got); diff != "" {
			t.Errorf("Open (-want +got):\n%s", diff)
		}
	}
}

// Every single-byte change of a sealed state is refused.
func TestOpenRefusesEveryTamperedByte(t *testing.T) {
	s := testSealer(t, "0123456789abcdef0123456789abcdef")
	tok, err := s.Seal(State{Kind: Parked, Binding: testB, Expires: testNow.Add(time.Minute), Call: "c1", Round: 1})
	if err != nil {
		t.Fatal(err)
	}
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	for i := range len(tok) {
		changes := []byte{'A', 'f', '.', '_', 0}
		if at := strings.IndexByte(alphabet, tok[i]); at >= 0 {
			changes = append(changes, alphabet[at^1], alphabet[at^2]) // the low bits, which padding leaves unused
		}
		for _, c := range changes {
			if tok[i] == c {
				continue
			}
			bad := []byte(tok)
			bad[i] = c
			if _, err := s.Open(string(bad), testB, testNow); err == nil {
				t.Fatalf("Open accepted %q (byte %d changed to %q)", bad, i, c)
			}
		}
	}
	for _, bad := range []string{"", "mf1.", "mf1..", tok[:len(tok)-1], tok + "A", "mf2" + tok[3:], "x" + tok} {
		if _, err := s.Open(bad, testB, testNow); err == nil {
			t.Errorf("Open accepted %q", bad)
		}
	}
}

func TestOpenRefuses(t *testing.T) {
	key := "0123456789abcdef0123456789abcdef"
	s := testSealer(t, key)
	tok, err := s.Seal(State{Kind: Wrapped, Binding: testB, Expires: testNow.Add(time.Minute), Inner: "x"})
	if err != nil {
		t.Fatal(err)
	}
	other := func(f func(*Binding)) Binding { b := testB; f(&b); return b }
	tests := []struct {
		name   string
		sealer *Sealer
		want   Binding
		now    time.Time
		err    error
	}{
		{name: "expired", sealer: s, want: testB, now: testNow.Add(time.Minute), err: ErrExpired},
		{name: "long expired", sealer: s, want: testB, now: testNow.Add(time.Hour), err: ErrExpired},
		{name: "another upstream", sealer: s, want: other(func(b *Binding) { b.Upstream = "other" }), now: testNow, err: ErrBound},
		{name: "another name", sealer: s, want: other(func(b *Binding) { b.Name = "fx__other" }), now: testNow, err: ErrBound},
		{name: "another principal", sealer: s, want: other(func(b *Binding) { b.Principal = "session:xyz" }), now: testNow, err: ErrBound},
		{name: "another method", sealer: s, want: other(func(b *Binding) { b.Method = "prompts/get" }), now: testNow, err: ErrBound},
		{name: "another key", sealer: testSealer(t, "1123456789abcdef0123456789abcdef"), want: testB, now: testNow, err: ErrTampered},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.sealer.Open(tok, tt.want, tt.now)
			if !errors.Is(err, tt.err) {
				t.Errorf("Open: got %v, want %v", err, tt.err)
			}
		})
	}
}

func TestNewSealerKey(t *testing.T) {
	if _, err := NewSealer([]byte("short")); err == nil {
		t.Error("NewSealer accepted a 5-byte key")
	}
	a, b := NewKey(), NewKey()
	if len(a) < KeySize || string(a) == string(b) {
		t.Errorf("NewKey: %d bytes, equal twice: %v", len(a), string(a) == string(b))
	}
	if _, err := NewSealer(a); err != nil {
		t.Errorf("NewSealer(NewKey()): %v", err)
	}
}
