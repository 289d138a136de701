// This file seals and opens the requestState values Manifold hands to modern
// clients in input_required results: its own state for a call parked on a
// legacy upstream, and the state of a modern upstream, wrapped. A sealed
// state is authenticated (HMAC-SHA256 with a per-process or configured key),
// bound to the method, the exposed name, the upstream and the principal that
// asked, and short-lived, so that a client can neither forge it, nor replay
// it against another upstream, tool or principal, nor keep it past its TTL.

package era

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// KeySize is the size of a state key in bytes (and the least accepted).
const KeySize = 32

// statePrefix starts every sealed state: the format and its version.
const statePrefix = "mf1."

// Kind says whose state a sealed state carries.
type Kind string

const (
	// Parked is Manifold's own state for a call parked on a legacy upstream
	// while the client answers its input requests. It is one-use: the
	// proxy's registry of parked calls refuses a state of an earlier round.
	Parked Kind = "parked"
	// Wrapped carries a modern upstream's own requestState, which goes back
	// only to that upstream.
	Wrapped Kind = "wrapped"
)

// Binding is what a state is valid for: one tools/call (prompts/get,
// resources/read) of one exposed name, routed to one upstream, by one
// principal.
type Binding struct {
	Method    string `json:"m"`
	Name      string `json:"n"`
	Upstream  string `json:"u"`
	Principal string `json:"p"`
}

// State is what a sealed requestState carries.
type State struct {
	Kind    Kind      `json:"k"`
	Binding           // what it is valid for
	Expires time.Time `json:"e"`
	// Call and Round name a parked call and its round (Parked), and
	// Replica the replica that holds the call, when replicas share the key.
	Call    string `json:"c,omitempty"`
	Round   int    `json:"r,omitempty"`
	Replica string `json:"rp,omitempty"`
	// Inner is the upstream's own requestState (Wrapped).
	Inner string `json:"i,omitempty"`
}

// Errors of Open. Each says what is wrong; the proxy adds what to do.
var (
	ErrMalformed = errors.New("requestState is not one this proxy issued")
	ErrTampered  = errors.New("requestState was altered or was sealed with another key")
	ErrExpired   = errors.New("requestState has expired")
	ErrBound     = errors.New("requestState belongs to another request")
)

// Sealer seals and opens states with one key. It is safe for concurrent use.
type Sealer struct {
	key []byte
}

// NewKey returns a fresh random key of KeySize bytes.
func NewKey() []byte {
	return []byte(rand.Text() + rand.Text()) // 2×26 base32 characters: 260 random bits
}

// NewSealer returns a Sealer for key, which must hold at least KeySize bytes.
func NewSealer(key []byte) (*Sealer, error) {
	if len(key) < KeySize {
		return nil, fmt.Errorf("state key has %d bytes; it needs at least %d (for example 32 random bytes, or 64 hex digits)", len(key), KeySize)
	}
	return &Sealer{key: append([]byte(nil), key...)}, nil
}

// Seal returns st as an opaque, authenticated string.
func (s *Sealer) Seal(st State) (string, error) {
	body, err := json.Marshal(st)
	if err != nil {
		return "", fmt.Errorf("seal requestState: %w", err)
	}
	payload := statePrefix + base64.RawURLEncoding.EncodeToString(body)
	return payload + "." + base64.RawURLEncoding.EncodeToString(s.mac(payload)), nil
}

// Open checks token and returns its state if it is authentic, bound to want
// and not expired at now.
func (s *Sealer) Open(token string, want Binding, now time.Time) (State, error) {
	if !strings.HasPrefix(token, statePrefix) {
		return State{}, ErrMalformed
	}
	dot := strings.LastIndexByte(token, '.')
	if dot < len(statePrefix) {
		return State{}, ErrMalformed
	}
	payload, sig := token[:dot], token[dot+1:]
	mac, err := base64.RawURLEncoding.Strict().DecodeString(sig)
	if err != nil || !hmac.Equal(mac, s.mac(payload)) {
		return State{}, ErrTampered
	}
	body, err := base64.RawURLEncoding.DecodeString(payload[len(statePrefix):])
	if err != nil {
		return State{}, ErrTampered
	}
	var st State
	if err := json.Unmarshal(body, &st); err != nil {
		return State{}, ErrTampered
	}
	if st.Binding != want {
		return State{}, ErrBound
	}
	if !now.Before(st.Expires) {
		return State{}, ErrExpired
	}
	return st, nil
}

func (s *Sealer) mac(payload string) []byte {
	h := hmac.New(sha256.New, s.key)
	h.Write([]byte(payload))
	return h.Sum(nil)
}
