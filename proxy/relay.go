//lint:file-ignore SA1019 sampling and roots are deprecated as of protocol 2026-07-28, but the proxy serves clients on 2024-11-05 to 2025-11-25, for whom they are part of the protocol (ARCHITECTURE §3 "Protocol versions").

package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"log/slog"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manifold-mcp/manifold/proxy/bridge"
	"github.com/manifold-mcp/manifold/proxy/relay"
	"github.com/manifold-mcp/manifold/proxy/session"
)

// What upstreams send towards clients (sampling, elicitation, roots, logs,
// progress, resource updates of subscriptions) is relayed by proxy/relay;
// this file gives it what it needs of the root (newRelay) and keeps what
// the root itself reads of the clients' capabilities.

// newRelay returns the relay of s.
func (s *Server) newRelay() *relay.Relay {
	return relay.New(relay.Options{
		WaitForClient: s.opts.WaitForClient,
		Sessions:      func() iter.Seq[*mcp.ServerSession] { return s.server.Sessions() },
		Backends: func() iter.Seq[relay.Backend] {
			return func(yield func(relay.Backend) bool) {
				for _, b := range s.gen.Load().backends {
					if !yield(b) {
						return
					}
				}
			}
		},
		ClientCaps:   s.relayCaps,
		ClientModern: s.client.clientModern.Load,
		Modern:       modernSession,
		Parked:       askParkedInto,
		Bridged: func(call context.Context) bool {
			return bridge.Of(call) != nil || call.Value(bridge.NoInputKey{}) != nil
		},
		NeedCap: bridge.NeedCap,
		Subscribable: func(ctx context.Context, req *mcp.SubscribeRequest) (string, string, string, error) {
			c := s.catalog.Load()
			server, original, uri, ok, err := c.ResolveResource(req.Params.URI)
			if err != nil {
				return "", "", "", err
			}
			if !ok || !c.ResourceAllowed(server, original, uri, session.RequestIdentity(ctx, req).Policy()).Visible {
				return "", "", "", mcp.ResourceNotFoundError(req.Params.URI)
			}
			return server, original, uri, nil
		},
		Resolve: func(uri string) (string, string, string, bool, error) { return s.catalog.Load().ResolveResource(uri) },
		Owners:  func() func(string) (string, string, bool) { return s.catalog.Load().ResourceOwner },
		Upstream: func(ctx context.Context, server string) (*mcp.ClientSession, relay.Backend, error) {
			cs, b, err := s.upFor(ctx, server)
			if b == nil {
				return cs, nil, err
			}
			return cs, b, err
		},
		WhenSessionEnds: s.whenSessionEnds,
		Closed:          s.isClosed,
		Life:            s.run.life,
		Log:             s.log,
	})
}

// askParkedInto is askParked for the relay (relay.Options.Parked): the
// client's answer is decoded into res.
func askParkedInto(ctx context.Context, method, mode string, params, res any) (bool, error) {
	raw, ok, err := bridge.Ask[json.RawMessage](ctx, method, mode, params)
	if !ok || err != nil {
		return ok, err
	}
	if err := json.Unmarshal(raw, res); err != nil {
		return true, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf(
			"the client's answer to %s from %q could not be decoded: %v", method, bridge.Of(ctx).Server(), err)}
	}
	return true, nil
}

// The relay reads a backend through relay.Backend: its supervision and
// these.

// Log is b's logger.
func (b *backend) Log() *slog.Logger { return b.log }

// CallTimeout bounds one request to b.
func (b *backend) CallTimeout() time.Duration { return b.cfg.CallTimeout }

// Unsolicited is what b may ask outside any call of its client.
func (b *backend) Unsolicited() Unsolicited { return b.cfg.AllowUnsolicited }

// relayCaps are the capabilities the downstream client declared, offered to
// the shared upstream processes: set in stdio mode, where one client is
// served (Options.WaitForClient), nil over HTTP.
func (s *Server) relayCaps() *mcp.ClientCapabilities {
	s.client.capsMu.Lock()
	defer s.client.capsMu.Unlock()
	return s.client.clientCaps
}

// setClientCaps records the capabilities upstreams may be offered. It is
// called once, before the upstreams start.
func (s *Server) setClientCaps(c *mcp.ClientCapabilities) {
	s.client.capsMu.Lock()
	defer s.client.capsMu.Unlock()
	s.client.clientCaps = c
}

// sharedAsks reports whether a client that declared caps may be asked
// something by a shared server over HTTP during its call: sampling or
// elicitation (relay.go sharedHTTPCaps; roots are never offered to it).
func sharedAsks(caps *mcp.ClientCapabilities) bool {
	return caps != nil && (caps.Sampling != nil || caps.Elicitation != nil)
}

// capNames lists the client capabilities of c that change what a server may
// do through Manifold, for status: sampling (and sampling.tools),
// elicitation (form, url), roots.
func capNames(c *mcp.ClientCapabilities) []string {
	if c == nil {
		return nil
	}
	var out []string
	if c.Sampling != nil {
		out = append(out, "sampling")
		if c.Sampling.Tools != nil {
			out = append(out, "sampling.tools")
		}
	}
	if e := c.Elicitation; e != nil {
		out = append(out, "elicitation")
		if e.URL != nil {
			out = append(out, "elicitation.url")
		}
	}
	if c.RootsV2 != nil || c.Roots.ListChanged {
		out = append(out, "roots")
	}
	return out
}
