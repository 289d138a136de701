package config

import (
	"net/url"
	"strings"
	"time"

	"github.com/manifold-mcp/manifold/internal/redact"
)

// This file decodes the [cluster] table: the state that replicas share
// (README "Several replicas"):
//
//	[cluster]
//	redis = "redis://127.0.0.1:6379/0"     # or "${file:/run/secrets/redis-url}"
//	key_prefix = "manifold:"                # every key this deployment writes
//	on_error = "closed"                     # or "open": Redis down refuses, or admits
//	timeout = "250ms"                       # one Redis round trip
//	key = "${file:/run/secrets/manifold-key}" # seals requestState, the same on every replica
//
// Without it, each process keeps its rate limits, spend caps, approvals
// and HTTP sessions alone. With it, key (or [protocol] state_key_file) is
// required: a requestState sealed by one replica must open on any other.

// Cluster is the [cluster] table. Its zero value (no table) means no shared
// state.
type Cluster struct {
	// Redis is the redis:// or rediss:// URL of the shared store; empty
	// without [cluster].
	Redis string
	// KeyPrefix starts every key written to Redis. DefaultKeyPrefix when
	// absent.
	KeyPrefix string
	// FailOpen is on_error = "open": while Redis cannot be reached, limits,
	// spend caps and shared approvals admit what they cannot check. If false
	// (on_error = "closed", the default), such calls are refused.
	FailOpen bool
	// Timeout bounds one Redis round trip. DefaultClusterTimeout when absent.
	Timeout time.Duration
	// Key seals the requestState values handed to 2026-07-28 clients, so
	// that every replica opens what another sealed (at least MinStateKeyBytes
	// bytes). Empty when absent: [protocol] state_key_file must then be set,
	// and Protocol.StateKey is used.
	Key string
}

// Defaults of [cluster].
const (
	DefaultKeyPrefix      = "manifold:"
	DefaultClusterTimeout = 250 * time.Millisecond
)

// cluster decodes the [cluster] table.
func (d *decoder) cluster(root *table) Cluster {
	t, ok := root.table("cluster")
	if !ok {
		return Cluster{}
	}
	d.clusterTable = t
	c := Cluster{KeyPrefix: DefaultKeyPrefix, Timeout: t.duration("timeout", DefaultClusterTimeout)}
	if s, ok := t.str("redis"); ok {
		u, err := url.Parse(s)
		switch {
		case err != nil || u.Host == "":
			t.errorf("redis", `%q is not a Redis URL; write it like "redis://127.0.0.1:6379/0" (or "rediss://" for TLS)`, redact.URL(s))
		case u.Scheme != "redis" && u.Scheme != "rediss":
			t.errorf("redis", `the scheme %q is not redis or rediss; write it like "redis://127.0.0.1:6379/0"`, u.Scheme)
		default:
			c.Redis = s
			d.secrets = append(d.secrets, redact.URLSecrets(s)...)
		}
	} else if !t.has("redis") {
		t.errorHere(`[cluster] needs redis = "redis://HOST:PORT/DB"; without it, remove [cluster] and each process counts alone`)
	}
	if s, ok := t.str("key_prefix"); ok {
		if s == "" || strings.ContainsAny(s, " \t\r\n{}") {
			t.errorf("key_prefix", `%q is not a key prefix; use letters, digits and ":" such as "manifold:prod:"`, s)
		} else {
			c.KeyPrefix = s
		}
	}
	if s, ok := t.str("on_error"); ok {
		switch s {
		case "closed":
		case "open":
			c.FailOpen = true
		default:
			t.errorf("on_error", `%q is not a fail mode; use "closed" (the default: refuse what cannot be checked) or "open" (admit it)`, s)
		}
	}
	if key, ok := t.str("key"); ok {
		if len(key) < MinStateKeyBytes {
			t.errorf("key", `the key is %d bytes long; it must be at least %d, the same on every replica: write key = "${file:cluster.key}" with the output of `+"`openssl rand -base64 32`"+` in that file`, len(key), MinStateKeyBytes)
		} else {
			c.Key = key
			d.recordSecret(key, "[cluster] key")
		}
	}
	t.finish()
	return c
}

// clusterKey checks, once [cluster] and [protocol] are decoded, that the
// replicas share a key to seal requestState with: [cluster] key, or
// [protocol] state_key_file (a file every replica mounts), not both.
func (d *decoder) clusterKey(cfg *Config) {
	t := d.clusterTable
	if t == nil || cfg.Cluster.Redis == "" {
		return
	}
	switch {
	case t.has("key") && cfg.Protocol.StateKey != nil:
		t.errorf("key", "both [cluster] key and [protocol] state_key_file are set; keep one, so that every replica seals requestState with the same key")
	case !t.has("key") && cfg.Protocol.StateKey == nil:
		t.errorHere(`[cluster] needs key = "${file:cluster.key}" (at least 32 bytes, the same on every replica; or [protocol] state_key_file): a 2026-07-28 client's requestState sealed by one replica must open on another`)
	}
}
