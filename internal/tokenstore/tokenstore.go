// Package tokenstore keeps the OAuth credentials that Manifold holds for its
// upstream servers, one file per server and identity, encrypted at rest
// (AES-256-GCM, with the server and identity as additional data so that a
// file moved to another name does not open). It never logs, never prints a
// token and talks to no network.
package tokenstore

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// ErrNotFound is returned (wrapped) by [Store.Load] when no credential is
// stored for the server and identity.
var ErrNotFound = errors.New("no stored credential")

// MinKeyLen is the shortest key accepted, in bytes.
const MinKeyLen = 32

// Credential is what one identity holds for one server: the token and what
// it takes to refresh it.
type Credential struct {
	// AccessToken, TokenType, RefreshToken and Expiry are the token
	// response's; Expiry is zero when the server gave none.
	AccessToken  string    `json:"access_token"`
	TokenType    string    `json:"token_type,omitempty"`
	RefreshToken string    `json:"refresh_token,omitempty"`
	Expiry       time.Time `json:"expiry,omitzero"`
	// Scopes are the scopes granted at login: the token response's scope,
	// else those requested. A new login asks for them again.
	Scopes []string `json:"scopes,omitempty"`
	// Wanted are scopes the server asked for since (403 insufficient_scope)
	// that the credential lacks: the next login asks for them too.
	Wanted []string `json:"wanted_scopes,omitempty"`

	// Resource is the RFC 8707 resource indicator the token was issued for;
	// a refresh sends it again.
	Resource string `json:"resource"`
	// TokenURL is the authorization server's token endpoint; AuthStyle is
	// how the client authenticates there (golang.org/x/oauth2.AuthStyle).
	TokenURL  string `json:"token_url"`
	AuthStyle int    `json:"auth_style,omitempty"`
	// ClientID and ClientSecret are the client's (preregistered, its
	// metadata document URL, or dynamically registered).
	ClientID     string `json:"client_id"`
	ClientSecret string `json:"client_secret,omitempty"`
	// RevocationURL is the authorization server's revocation endpoint (RFC
	// 7009) from its metadata at login; empty if it named none.
	RevocationURL string `json:"revocation_url,omitempty"`

	// Saved is when the credential was last written.
	Saved time.Time `json:"saved"`
}

// Store is a folder of encrypted credential files. Its methods are safe for
// concurrent use by several processes: a write replaces a file atomically.
type Store struct {
	dir  string
	aead cipher.AEAD
}

// Open returns the store in dir, encrypted with a key derived from secret
// (HKDF-SHA256), which must be at least MinKeyLen bytes. The folder is
// created (0700) on the first Save.
func Open(dir string, secret []byte) (*Store, error) {
	if dir == "" {
		return nil, errors.New("token store: no folder given")
	}
	if len(secret) < MinKeyLen {
		return nil, fmt.Errorf("token store: the key is %d bytes long; it must be at least %d (for example the output of `openssl rand -base64 32` in a file read with ${file:PATH})", len(secret), MinKeyLen)
	}
	key, err := hkdf.Key(sha256.New, secret, nil, "manifold token store v1", 32)
	if err != nil {
		return nil, fmt.Errorf("token store: deriving the key: %w", err)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("token store: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("token store: %w", err)
	}
	return &Store{dir: dir, aead: aead}, nil
}

// Dir is the store's folder.
func (s *Store) Dir() string { return s.dir }

// Path is the file of server's credential for identity ("" is the service
// credential). The identity is hashed: the name shows neither.
func (s *Store) Path(server, identity string) string {
	sum := sha256.Sum256([]byte(identity))
	name := "service"
	if identity != "" {
		name = hex.EncodeToString(sum[:12])
	}
	return filepath.Join(s.dir, server, name+".tok")
}

func additional(server, identity string) []byte {
	return []byte("manifold token\x00" + server + "\x00" + identity)
}

// Save stores c as server's credential for identity, replacing any, in a
// file only the owner can read (0600).
func (s *Store) Save(server, identity string, c *Credential) error {
	c.Saved = time.Now().UTC()
	plain, err := json.Marshal(c)
	if err != nil {
		return fmt.Errorf("token store: encoding the credential of %s: %w", who(server, identity), err)
	}
	nonce := make([]byte, s.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return fmt.Errorf("token store: %w", err)
	}
	sealed := s.aead.Seal(nonce, nonce, plain, additional(server, identity))
	path := s.Path(server, identity)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("token store: %w", err)
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".tok-*")
	if err != nil {
		return fmt.Errorf("token store: %w", err)
	}
	tmp := f.Name()
	defer os.Remove(tmp) // after a successful rename, there is nothing to remove
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return fmt.Errorf("token store: %w", err)
	}
	if _, err := f.Write(sealed); err != nil {
		f.Close()
		return fmt.Errorf("token store: writing %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("token store: writing %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("token store: %w", err)
	}
	return nil
}

// Load returns server's credential for identity. The error wraps ErrNotFound
// when there is none; a file that does not decrypt (another key, or moved
// from another server or identity) is an error that says so.
func (s *Store) Load(server, identity string) (*Credential, error) {
	path := s.Path(server, identity)
	sealed, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("token store: %s: %w", who(server, identity), ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("token store: %w", err)
	}
	n := s.aead.NonceSize()
	if len(sealed) < n {
		return nil, fmt.Errorf("token store: %s is truncated; log in again", path)
	}
	plain, err := s.aead.Open(nil, sealed[:n], sealed[n:], additional(server, identity))
	if err != nil {
		return nil, fmt.Errorf("token store: %s does not decrypt with the configured key (the key changed, or the file belongs to another server or identity); log in again", path)
	}
	var c Credential
	if err := json.Unmarshal(plain, &c); err != nil {
		return nil, fmt.Errorf("token store: %s: %w", path, err)
	}
	return &c, nil
}

// Delete removes server's credential for identity. It reports whether there
// was one.
func (s *Store) Delete(server, identity string) (bool, error) {
	err := os.Remove(s.Path(server, identity))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("token store: %w", err)
	}
	return true, nil
}

func who(server, identity string) string {
	if identity == "" {
		return fmt.Sprintf("server %q (service credential)", server)
	}
	return fmt.Sprintf("server %q, identity %q", server, identity)
}
