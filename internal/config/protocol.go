package config

import (
	"bytes"
	"os"
	"time"
)

// DefaultMaxInputRounds bounds the rounds of input a legacy client is asked
// for on behalf of a modern server in one call (max_input_rounds).
const DefaultMaxInputRounds = 10

// MinStateKeyBytes is the least size of the key in state_key_file.
const MinStateKeyBytes = 32

// Protocol is the [protocol] table: how the eras are bridged.
type Protocol struct {
	// StateKey keys the requestState values handed to modern clients, read
	// from state_key_file (whitespace trimmed); nil: a random key per process.
	StateKey []byte
	// StateTTL bounds a requestState's life; zero: the call's call_timeout.
	StateTTL time.Duration
	// MaxInputRounds is max_input_rounds; zero: DefaultMaxInputRounds.
	MaxInputRounds int
}

// protocol decodes the [protocol] table.
func (d *decoder) protocol(root *table, cfg *Config) Protocol {
	var p Protocol
	t, ok := root.table("protocol")
	if !ok {
		return p
	}
	if file, ok := t.str("state_key_file"); ok {
		p.StateKey = d.stateKey(t, resolve(cfg.Dir, file))
	}
	p.StateTTL = t.duration("state_ttl", 0)
	if n, ok := t.integer("max_input_rounds"); ok {
		if n < 1 || n > 100 {
			t.errorf("max_input_rounds", "%d is out of range; use a number of rounds between 1 and 100, like %d", n, DefaultMaxInputRounds)
		} else {
			p.MaxInputRounds = int(n)
		}
	}
	t.finish()
	return p
}

// stateKey reads the key file at path: it must be readable by its owner
// only (it authenticates what clients hand back) and hold at least
// MinStateKeyBytes bytes besides surrounding whitespace.
func (d *decoder) stateKey(t *table, path string) []byte {
	fi, err := os.Stat(path)
	if err != nil {
		t.errorf("state_key_file", "%v; create it with at least %d random bytes, for example: openssl rand -hex 32 > %s && chmod 600 %s", err, MinStateKeyBytes, path, path)
		return nil
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		t.errorf("state_key_file", "%s is readable or writable by other users (mode %04o); it authenticates the requestState clients hand back, so restrict it: chmod 600 %s", path, perm, path)
		return nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.errorf("state_key_file", "%v", err)
		return nil
	}
	key := bytes.TrimSpace(data)
	if len(key) < MinStateKeyBytes {
		t.errorf("state_key_file", "%s holds %d bytes; a state key needs at least %d: write one with openssl rand -hex 32 > %s", path, len(key), MinStateKeyBytes, path)
		return nil
	}
	d.secrets = append(d.secrets, string(key))
	return key
}
