package tokenstore

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var testKey = []byte("0123456789abcdef0123456789abcdef")

func TestRoundTripAndIsolation(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, testKey)
	if err != nil {
		t.Fatal(err)
	}
	want := &Credential{AccessToken: "access-secret-value-1", RefreshToken: "refresh-secret-value-1",
		Expiry: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC), Resource: "https://up.example/mcp", TokenURL: "https://as.example/token", ClientID: "c1"}
	if err := s.Save("notes", "user:alice", want); err != nil {
		t.Fatal(err)
	}
	got, err := s.Load("notes", "user:alice")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Load (-want +got):\n%s", diff)
	}

	path := s.Path("notes", "user:alice")
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
	raw, _ := os.ReadFile(path)
	for _, secret := range []string{want.AccessToken, want.RefreshToken, "alice"} {
		if bytes.Contains(raw, []byte(secret)) {
			t.Errorf("file holds %q in the clear", secret)
		}
	}

	for _, tc := range []struct {
		name             string
		server, identity string
		notFound         bool
	}{
		{name: "another identity", server: "notes", identity: "user:bob", notFound: true},
		{name: "service credential", server: "notes", identity: "", notFound: true},
		{name: "another server", server: "mail", identity: "user:alice", notFound: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.Load(tc.server, tc.identity)
			if errors.Is(err, ErrNotFound) != tc.notFound {
				t.Errorf("Load(%q, %q) = %v, want ErrNotFound %v", tc.server, tc.identity, err, tc.notFound)
			}
		})
	}

	// A file moved to another identity's name does not open.
	if err := os.MkdirAll(filepath.Dir(s.Path("notes", "user:bob")), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.Path("notes", "user:bob"), raw, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Load("notes", "user:bob"); err == nil || errors.Is(err, ErrNotFound) {
		t.Errorf("Load of alice's file under bob's name = %v, want a decryption error", err)
	}

	// Another key does not open it.
	other, err := Open(dir, []byte("another key another key another key!"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Load("notes", "user:alice"); err == nil || errors.Is(err, ErrNotFound) {
		t.Errorf("Load with another key = %v, want a decryption error", err)
	}

	if ok, err := s.Delete("notes", "user:alice"); !ok || err != nil {
		t.Errorf("Delete = %v, %v; want true, nil", ok, err)
	}
	if _, err := s.Load("notes", "user:alice"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Load after Delete = %v, want ErrNotFound", err)
	}
}

func TestShortKey(t *testing.T) {
	if _, err := Open(t.TempDir(), []byte("short")); err == nil {
		t.Error("Open with a 5-byte key succeeded")
	}
}
