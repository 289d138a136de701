package main

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/manifold-mcp/manifold/internal/cluster"
	"github.com/manifold-mcp/manifold/internal/config"
	"github.com/manifold-mcp/manifold/proxy"
)

// clusterStore returns the shared store of the config's [cluster] table,
// nil without one.
func clusterStore(cfg *config.Config, log *slog.Logger) (*cluster.Store, error) {
	cl := cfg.Cluster
	if cl.Redis == "" {
		return nil, nil
	}
	st, err := cluster.New(cluster.Options{URL: cl.Redis, KeyPrefix: cl.KeyPrefix, FailOpen: cl.FailOpen, Timeout: cl.Timeout, Logger: log,
		Key: []byte(cl.Key), MaxAnswerBytes: int(cfg.HTTP.MaxBodyBytes)})
	if err != nil {
		return nil, fmt.Errorf("%s: [cluster]: %w", cfg.Path, err)
	}
	return st, nil
}

// clusterOptions shares the rate limits, spend caps and approve-call's
// approvals on the config's [cluster] Redis, if it has one. The store lives
// as long as the process; [cluster] is read at start only (a reload keeps
// it, and says that a restart is needed: restartNeeded). A Redis that does not answer at start is logged, not fatal: the
// fail mode (on_error) applies until it does.
func clusterOptions(opts *proxy.Options, cfg *config.Config, log *slog.Logger) error {
	st, err := clusterStore(cfg, log)
	if err != nil || st == nil {
		return err
	}
	_ = st.Ping(context.Background()) // logs an outage itself
	opts.RateStore, opts.SpendLedger, opts.Approvals, opts.Sessions = st, st, st, st
	if cfg.Cluster.Key != "" {
		opts.Answers = st // answers.go: a legacy client's answer reaches the replica that asked
		opts.Retries = st // retries.go: a 2026-07-28 retry reaches the replica that holds the call
	}
	return nil
}

// stateKey is the key that seals requestState: [cluster] key, which every
// replica shares, or [protocol] state_key_file; nil (a random key of this
// process) without either.
func stateKey(cfg *config.Config) []byte {
	if cfg.Cluster.Key != "" {
		return []byte(cfg.Cluster.Key)
	}
	return cfg.Protocol.StateKey
}
