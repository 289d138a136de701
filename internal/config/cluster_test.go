package config

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// testClusterKey is the [cluster] key of the tests (32 bytes).
const testClusterKey = "0123456789abcdef0123456789abcdef"

func TestCluster(t *testing.T) {
	tests := []struct {
		name, doc string
		env       map[string]string
		want      Cluster
		err       string
	}{
		{name: "off by default", doc: ""},
		{name: "defaults", doc: "[cluster]\nredis = \"redis://127.0.0.1:6379/0\"\nkey = \"0123456789abcdef0123456789abcdef\"\n",
			want: Cluster{Redis: "redis://127.0.0.1:6379/0", KeyPrefix: DefaultKeyPrefix, Timeout: DefaultClusterTimeout, Key: testClusterKey}},
		{name: "every key", doc: "[cluster]\nredis = \"rediss://redis.internal:6380/2\"\nkey_prefix = \"mf:prod:\"\non_error = \"open\"\ntimeout = \"1s\"\nkey = \"0123456789abcdef0123456789abcdef\"\n",
			want: Cluster{Redis: "rediss://redis.internal:6380/2", KeyPrefix: "mf:prod:", FailOpen: true, Timeout: 1e9, Key: testClusterKey}},
		{name: "closed", doc: "[cluster]\nredis = \"redis://h:1/0\"\non_error = \"closed\"\nkey = \"0123456789abcdef0123456789abcdef\"\n",
			want: Cluster{Redis: "redis://h:1/0", KeyPrefix: DefaultKeyPrefix, Timeout: DefaultClusterTimeout, Key: testClusterKey}},
		{name: "from the environment", doc: "[cluster]\nredis = \"${env:REDIS_URL}\"\nkey = \"0123456789abcdef0123456789abcdef\"\n", env: map[string]string{"REDIS_URL": "redis://:s3cret-pass-word@h:6379/0"},
			want: Cluster{Redis: "redis://:s3cret-pass-word@h:6379/0", KeyPrefix: DefaultKeyPrefix, Timeout: DefaultClusterTimeout, Key: testClusterKey}},
		{name: "no redis", doc: "[cluster]\non_error = \"open\"\n",
			err: `proxy.toml:1:2: cluster: [cluster] needs redis = "redis://HOST:PORT/DB"; without it, remove [cluster] and each process counts alone`},
		{name: "bad scheme", doc: "[cluster]\nredis = \"http://h:6379\"\n",
			err: `proxy.toml:2:1: cluster.redis: the scheme "http" is not redis or rediss; write it like "redis://127.0.0.1:6379/0"`},
		{name: "no key", doc: "[cluster]\nredis = \"redis://h:1\"\n",
			err: `proxy.toml:1:2: cluster: [cluster] needs key = "${file:cluster.key}" (at least 32 bytes, the same on every replica; or [protocol] state_key_file)`},
		{name: "short key", doc: "[cluster]\nredis = \"redis://h:1\"\nkey = \"short\"\n",
			err: `proxy.toml:3:1: cluster.key: the key is 5 bytes long; it must be at least 32, the same on every replica`},
		{name: "bad fail mode", doc: "[cluster]\nredis = \"redis://h:1\"\nkey = \"0123456789abcdef0123456789abcdef\"\non_error = \"retry\"\n",
			err: `proxy.toml:4:1: cluster.on_error: "retry" is not a fail mode; use "closed" (the default: refuse what cannot be checked) or "open" (admit it)`},
		{name: "unknown key", doc: "[cluster]\nredis = \"redis://h:1\"\nkey = \"0123456789abcdef0123456789abcdef\"\nprefix = \"x\"\n",
			err: `proxy.toml:4:1: cluster.prefix: unknown key`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			cfg, err := Parse("proxy.toml", []byte(tt.doc))
			if tt.err != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tt.err) {
					t.Fatalf("Parse error = %v, want %s", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if diff := cmp.Diff(tt.want, cfg.Cluster); diff != "" {
				t.Errorf("Cluster (-want +got):\n%s", diff)
			}
			if cfg.Cluster.Key != "" && !strings.Contains(strings.Join(cfg.Secrets, " "), testClusterKey) {
				t.Errorf("the [cluster] key is not among the config's secrets %q", cfg.Secrets)
			}
			if tt.env != nil && !strings.Contains(strings.Join(cfg.Secrets, " "), "s3cret-pass-word") {
				t.Errorf("the Redis password is not among the config's secrets %q", cfg.Secrets)
			}
		})
	}
}
