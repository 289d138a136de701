package config

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCluster(t *testing.T) {
	tests := []struct {
		name, doc string
		env       map[string]string
		want      Cluster
		err       string
	}{
		{name: "off by default", doc: ""},
		{name: "defaults", doc: "[cluster]\nredis = \"redis://127.0.0.1:6379/0\"\n",
			want: Cluster{Redis: "redis://127.0.0.1:6379/0", KeyPrefix: DefaultKeyPrefix, Timeout: DefaultClusterTimeout}},
		{name: "every key", doc: "[cluster]\nredis = \"rediss://redis.internal:6380/2\"\nkey_prefix = \"mf:prod:\"\non_error = \"open\"\ntimeout = \"1s\"\n",
			want: Cluster{Redis: "rediss://redis.internal:6380/2", KeyPrefix: "mf:prod:", FailOpen: true, Timeout: 1e9}},
		{name: "closed", doc: "[cluster]\nredis = \"redis://h:1/0\"\non_error = \"closed\"\n",
			want: Cluster{Redis: "redis://h:1/0", KeyPrefix: DefaultKeyPrefix, Timeout: DefaultClusterTimeout}},
		{name: "from the environment", doc: "[cluster]\nredis = \"${env:REDIS_URL}\"\n", env: map[string]string{"REDIS_URL": "redis://:s3cret-pass-word@h:6379/0"},
			want: Cluster{Redis: "redis://:s3cret-pass-word@h:6379/0", KeyPrefix: DefaultKeyPrefix, Timeout: DefaultClusterTimeout}},
		{name: "no redis", doc: "[cluster]\non_error = \"open\"\n",
			err: `proxy.toml:1:2: cluster: [cluster] needs redis = "redis://HOST:PORT/DB"; without it, remove [cluster] and each process counts alone`},
		{name: "bad scheme", doc: "[cluster]\nredis = \"http://h:6379\"\n",
			err: `proxy.toml:2:1: cluster.redis: the scheme "http" is not redis or rediss; write it like "redis://127.0.0.1:6379/0"`},
		{name: "bad fail mode", doc: "[cluster]\nredis = \"redis://h:1\"\non_error = \"retry\"\n",
			err: `proxy.toml:3:1: cluster.on_error: "retry" is not a fail mode; use "closed" (the default: refuse what cannot be checked) or "open" (admit it)`},
		{name: "unknown key", doc: "[cluster]\nredis = \"redis://h:1\"\nprefix = \"x\"\n",
			err: `proxy.toml:3:1: cluster.prefix: unknown key`},
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
			if tt.env != nil && !strings.Contains(strings.Join(cfg.Secrets, " "), "s3cret-pass-word") {
				t.Errorf("the Redis password is not among the config's secrets %q", cfg.Secrets)
			}
		})
	}
}
