package auth

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	sdkauth "github.com/modelcontextprotocol/go-sdk/auth"
)

// maxJWKSKeys bounds the keys taken from one JWKS document.
const maxJWKSKeys = 100

// minRSABits is the smallest RSA key accepted from a JWKS.
const minRSABits = 2048

// errNoKey says that no key of the issuer's JWKS can verify a token: its kid
// is unknown (also after a refresh), or no key fits its algorithm.
var errNoKey = errors.New("no key of the issuer's JWKS matches the token's kid and alg")

// jwks is the issuer's signing keys, fetched over HTTP and cached: fetched
// at the first token, again when they are older than maxAge, and when a
// token names a kid that is not among them (a rotation at the issuer), but
// never more often than once per minRefresh, so that tokens with made-up
// kids cannot make Manifold hammer the issuer. A fetch that fails keeps the
// keys already held (a key does not become invalid because the issuer is
// unreachable); with none held, every token is refused (fail closed).
type jwks struct {
	url        string // "" until discovered from the issuer's metadata
	issuer     string
	client     *http.Client
	maxBytes   int64
	minRefresh time.Duration
	maxAge     time.Duration
	now        func() time.Time
	log        *slog.Logger

	fetching chan struct{} // a one-slot semaphore: one fetch at a time

	mu      sync.Mutex
	keys    []jose.JSONWebKey // guarded by mu
	fetched time.Time         // last successful fetch; guarded by mu
	tried   time.Time         // last fetch attempt; guarded by mu
	lastErr error             // of the last attempt; guarded by mu
	fetches int               // attempts, for tests; guarded by mu
}

// candidates returns the keys that may have signed a token with this kid and
// alg, fetching the set first when it is stale or lacks the kid (within the
// rate bound).
func (j *jwks) candidates(ctx context.Context, kid string, alg jose.SignatureAlgorithm) ([]jose.JSONWebKey, error) {
	keys, stale := j.snapshot()
	held := pick(keys, kid, alg)
	if len(held) > 0 && !stale {
		return held, nil
	}
	// A stale set that holds the key is refreshed only if no other request
	// is refreshing it already: the keys held serve meanwhile, so a slow
	// issuer slows down one request, not all of them.
	err := j.refresh(ctx, len(held) == 0)
	keys, _ = j.snapshot()
	if c := pick(keys, kid, alg); len(c) > 0 {
		return c, nil
	}
	if err != nil {
		return nil, err
	}
	return nil, errNoKey
}

func (j *jwks) snapshot() ([]jose.JSONWebKey, bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.keys, j.fetched.IsZero() || j.now().Sub(j.fetched) > j.maxAge
}

// pick returns the keys of set usable for kid and alg: same kid (any key
// when the token names none), a signing key, of alg if the key says.
func pick(set []jose.JSONWebKey, kid string, alg jose.SignatureAlgorithm) []jose.JSONWebKey {
	var out []jose.JSONWebKey
	for _, k := range set {
		if (kid == "" || k.KeyID == kid) && (k.Algorithm == "" || k.Algorithm == string(alg)) && keyFitsAlg(k, alg) {
			out = append(out, k)
		}
	}
	return out
}

// keyFitsAlg reports whether alg is an algorithm of k's type: an RSA key
// verifies RS* and PS*, an EC key ES*, an Ed25519 key EdDSA.
func keyFitsAlg(k jose.JSONWebKey, alg jose.SignatureAlgorithm) bool {
	switch k.Key.(type) {
	case *rsa.PublicKey:
		switch alg {
		case jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512:
			return true
		}
	case *ecdsa.PublicKey:
		switch alg {
		case jose.ES256, jose.ES384, jose.ES512:
			return true
		}
	case ed25519.PublicKey:
		return alg == jose.EdDSA
	}
	return false
}

// refresh fetches the set unless a fetch was tried less than minRefresh ago;
// it returns the error of the last attempt. Without wait it returns at once
// when another fetch is under way.
func (j *jwks) refresh(ctx context.Context, wait bool) error {
	if !wait {
		select {
		case j.fetching <- struct{}{}:
		default:
			return nil
		}
	} else {
		select {
		case j.fetching <- struct{}{}:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	defer func() { <-j.fetching }()
	j.mu.Lock()
	if !j.tried.IsZero() && j.now().Sub(j.tried) < j.minRefresh {
		err := j.lastErr
		j.mu.Unlock()
		return err
	}
	j.tried = j.now()
	j.fetches++
	j.mu.Unlock()

	keys, err := j.fetch(ctx)
	j.mu.Lock()
	defer j.mu.Unlock()
	j.lastErr = err
	if err != nil {
		j.log.Warn("fetching the issuer's JWKS failed; tokens signed by keys not already held are refused", "issuer", j.issuer, "jwks_url", j.url, "err", err)
		return err
	}
	j.keys, j.fetched = keys, j.now()
	return nil
}

// fetch GETs the JWKS (discovering its URL from the issuer's metadata first
// if it is not configured) and keeps its public signing keys.
func (j *jwks) fetch(ctx context.Context) ([]jose.JSONWebKey, error) {
	if j.url == "" {
		// The issuer's OAuth 2.0 (RFC 8414) or OpenID metadata names it.
		meta, err := sdkauth.GetAuthServerMetadata(ctx, j.issuer, j.client)
		switch {
		case err != nil:
			return nil, fmt.Errorf("reading the metadata of issuer %q to find its jwks_uri: %w (set auth.jwks_url to skip discovery)", j.issuer, err)
		case meta == nil || meta.JWKSURI == "":
			return nil, fmt.Errorf("issuer %q publishes no metadata with a jwks_uri; set auth.jwks_url", j.issuer)
		}
		j.url = meta.JWKSURI
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, j.url, nil)
	if err != nil {
		return nil, fmt.Errorf("JWKS %s: %w", j.url, err)
	}
	req.Header.Set("Accept", "application/json, application/jwk-set+json")
	resp, err := j.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("JWKS %s: %w", j.url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("JWKS %s: HTTP %s", j.url, resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, j.maxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("JWKS %s: reading: %w", j.url, err)
	}
	if int64(len(body)) > j.maxBytes {
		return nil, fmt.Errorf("JWKS %s: larger than %d bytes", j.url, j.maxBytes)
	}
	var doc struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, fmt.Errorf("JWKS %s: not a JWK set: %w", j.url, err)
	}
	var keys []jose.JSONWebKey
	for _, raw := range doc.Keys {
		var k jose.JSONWebKey
		if err := k.UnmarshalJSON(raw); err != nil {
			continue // a key of a type this build does not know: skip it
		}
		if usable(k) {
			keys = append(keys, k)
		}
		if len(keys) == maxJWKSKeys {
			break
		}
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("JWKS %s: no public signing key (RSA of %d bits or more, EC, Ed25519)", j.url, minRSABits)
	}
	return keys, nil
}

// usable reports whether k is a public key for signatures: never a
// symmetric (oct) key, whatever the document says, so that no token can be
// "signed" with a secret taken from a public document.
func usable(k jose.JSONWebKey) bool {
	if !k.Valid() || (k.Use != "" && k.Use != "sig") {
		return false
	}
	switch pk := k.Key.(type) {
	case *rsa.PublicKey:
		return pk.N.BitLen() >= minRSABits
	case *ecdsa.PublicKey, ed25519.PublicKey:
		return true
	}
	return false
}
