package proxy

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manifold-mcp/manifold/internal/jsonscan"
	"github.com/manifold-mcp/manifold/internal/telemetry"
	"github.com/manifold-mcp/manifold/policy"
	"github.com/manifold-mcp/manifold/proxy/confirm"
	"github.com/manifold-mcp/manifold/proxy/era"
	"github.com/manifold-mcp/manifold/proxy/internal/wire"
	"github.com/manifold-mcp/manifold/proxy/naming"
	"github.com/manifold-mcp/manifold/proxy/observe"
	"github.com/manifold-mcp/manifold/proxy/session"
	"github.com/manifold-mcp/manifold/upstream"
)

// unknownTool is the protocol error for a tool that does not exist for the
// caller: unknown and hidden tools get the same answer. It suggests visible
// tools that name could have meant (an original name without its server's
// prefix, another case, "-" for "_"), never a hidden one, and says how the
// names are formed.
func (c *catalog) unknownTool(name string) *jsonrpc.Error {
	var b strings.Builder
	fmt.Fprintf(&b, "unknown tool %q", name)
	visible := slices.Sorted(maps.Keys(c.toolDefs))
	var near []string
	for _, exposed := range visible {
		e, _ := c.tools.Lookup(exposed)
		if e.Original == name || looseName(exposed) == looseName(name) || looseName(e.Original) == looseName(name) {
			near = append(near, strconv.Quote(exposed))
		}
	}
	if len(near) > 0 {
		fmt.Fprintf(&b, "; did you mean %s?", strings.Join(near[:min(len(near), 5)], " or "))
	}
	b.WriteString(". Tools are named <server>__<tool>")
	if len(visible) > 0 {
		fmt.Fprintf(&b, " (for example %q)", visible[0])
	}
	b.WriteString("; tools/list shows them")
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: b.String()}
}

// looseName folds case and "-" into "_", as clients do (Codex rewrites "-").
func looseName(s string) string {
	return strings.ReplaceAll(strings.ToLower(s), "-", "_")
}

// downServer returns the server whose namespace holds name (by prefix: an
// error message's guess, never a route) when that server is not up and has
// no listing, so that a call of one of its tools says why instead of
// "unknown tool".
func (c *catalog) downServer(name string) *backend {
	var best *backend
	for _, b := range c.gen.backends {
		p := b.cfg.Prefix
		if p == "" || !strings.HasPrefix(name, p+naming.Separator) || best != nil && len(best.cfg.Prefix) >= len(p) {
			continue
		}
		down := b.Down()
		if down {
			best = b
		}
	}
	return best
}

// toolError builds an isError result whose text tells the model what happened
// and what to do.
func toolError(format string, args ...any) json.RawMessage {
	b, _ := json.Marshal(struct {
		Content []mcp.TextContent `json:"content"`
		IsError bool              `json:"isError"`
	}{[]mcp.TextContent{{Text: fmt.Sprintf(format, args...)}}, true})
	return b
}

// callTool forwards one tools/call for the exposed tool name. fields holds the
// downstream params other than "name" as raw JSON (arguments, _meta and
// anything else), forwarded untouched except for the progress token. It returns
// the raw result, or a *jsonrpc.Error to send back as a protocol error, or the
// caller's context error when the downstream cancelled.
func (s *Server) callTool(ctx context.Context, ss *mcp.ServerSession, name string, fields map[string]json.RawMessage) (json.RawMessage, error) {
	type result struct {
		raw json.RawMessage
		err error
	}
	ch := make(chan result, 1) // a call may answer before startCall returns
	s.startCall(ctx, ss, name, fields, func(raw json.RawMessage, err error) { ch <- result{raw, err} })
	r := <-ch
	return r.raw, r.err
}

// startCall is callTool without waiting: it routes, decides and sends the
// call, and finish gets the outcome exactly once. For a child process the
// completion (result rewriting, audit, finish) runs on the goroutine that
// reads the server's output, so no goroutine waits per call (ARCHITECTURE §3
// "The hot path is lean"); finish must not block for long.
//
// startCall does not wait on its caller's goroutine: a call is routed,
// decided and written to its server there (for stdio, by the goroutine that
// reads the client, with no hand-off per call), and what may wait (the
// initial start, the search surface, a lazy start, a process of its own, a
// shared limit on Redis, a person's approval, a client's retry) goes on on a
// goroutine of its own (mayWait). finish may be called before startCall
// returns.
func (s *Server) startCall(ctx context.Context, ss *mcp.ServerSession, name string, fields map[string]json.RawMessage, finish func(json.RawMessage, error)) {
	s.calledOnce.Do(func() { close(s.called) })
	select {
	case <-s.ready:
		if !slices.Contains(metaTools, name) || ctx.Value(innerCallKey{}) != nil {
			s.routeCall(ctx, ss, name, fields, finish)
			return
		}
	default:
	}
	go s.routeCall(ctx, ss, name, fields, finish)
}

// mayWait reports whether the rest of a call of a visible tool, decided d on
// backend b, may wait for something else than writing to its server: then
// it does not run on the caller's goroutine (startCall).
func (s *Server) mayWait(b *backend, d policy.Decision, re reqEra, fields map[string]json.RawMessage) bool {
	if b == nil || d.Confirm || b.PerIdentity() || b.PerSession() {
		return true // a person's approval, a connection or process of its own
	}
	if _, retry := fields["requestState"]; retry && re.modern {
		return true // a parked call may be resumed
	}
	if s.guard.MayWait(d.Limits) {
		return true // a round trip to the shared store
	}
	st, up, _ := b.Snapshot()
	if st != stateUp || up == nil {
		return true // a lazy server starts first
	}
	return re.modern && !up.Modern() // parked on a legacy server (mrtr.go)
}

// routeCall is startCall on the goroutine it runs on.
func (s *Server) routeCall(ctx context.Context, ss *mcp.ServerSession, name string, fields map[string]json.RawMessage, finish func(json.RawMessage, error)) {
	var settled atomic.Bool // settle masked the result already
	finish = s.guard.MaskingFinish(finish, settled.Load)
	if s.obs.Tracing() {
		ctx, finish = startCallSpan(s.obs, ctx, ss, name, fields, finish)
	}
	if s.serveSurface(ctx, ss, name, fields, finish) {
		return
	}
	start := time.Now()
	rec := observe.Record{Method: "tools/call", Exposed: name, Decision: "denied", Outcome: "unknown tool"}
	rec.Via, _ = ctx.Value(innerCallKey{}).(string)
	id := session.IdentityFrom(ctx)
	who := id.Policy()
	rec.Identity = id.Subject
	// A client that calls before (or without) listing is a client too: its
	// mode is decided here as a list would decide it, and status shows it.
	rec.Catalog = s.sessionMode(ctx, ss, nil, s.catalog.Load(), true)
	var cleanups []func()
	var upSpan *telemetry.Span // the upstream call's, when traced
	var pc *parkedCall         // the bridge of a modern client's call on a legacy server
	rounds := 0                // rounds of input a legacy client gave a modern server
	done := func(raw json.RawMessage, err error) {
		for i := len(cleanups) - 1; i >= 0; i-- {
			cleanups[i]()
		}
		if upSpan != nil {
			upSpan.End(observe.ErrType(raw, err))
		}
		if s.obs.Records() {
			rec.Rounds = rounds
			if pc != nil {
				rec.Rounds = pc.rounds()
			}
			switch {
			case err != nil:
				if rec.Outcome == "" {
					rec.Outcome, rec.Error = "error", err.Error()
				}
			case rec.Outcome == "":
				rec.Outcome = "ok"
				if jsonscan.Contains(raw, wire.MarkIsError) {
					rec.Outcome = "tool error"
				}
			}
			rec.ResultBytes = len(raw)
			if ss == nil { // a 2026-07-28 request over HTTP: the client names itself
				rec.Client = clientOf(ctx, nil, nil).Name
			}
			recordSession(&rec, ss)
			s.obs.Record(rec, start, fields["arguments"])
		}
		finish(raw, err)
	}
	notFound := func(c *catalog) {
		if msg, held := c.heldMessage("tool", name); held { // awaits review (pinned.go): say so
			he, _ := c.tools.Lookup(name)
			rec.Server, rec.Original, rec.Outcome, rec.Rule = he.Server, he.Original, "awaits review", "pin"
			done(nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: msg})
			return
		}
		if he, found := c.tools.Lookup(name); found { // hidden: audited with its rule
			rec.Server, rec.Original = he.Server, he.Original
			rec.Outcome = "hidden"
			_, rec.Rule = observe.DecisionWords(c.decision("tool\x00"+name, who))
		} else if b := c.downServer(name); b != nil {
			rec.Server, rec.Outcome = b.name, "unavailable"
			done(toolError("%s", b.Unavailable()), nil)
			return
		}
		done(nil, c.unknownTool(name))
	}
	if s.stopping.Load() { // drain.go: no call for an upstream that is stopping
		rec.Outcome = "stopping"
		done(stoppingResult(), nil)
		return
	}
	c := s.catalog.Load()
	e, d, ok := c.visibleTool(name, who)
	if !ok {
		select {
		case <-s.ready:
			notFound(c)
			return
		default:
		}
		// Upstreams are still starting: the tool may be about to appear.
		s.waitReady(ctx)
		c = s.catalog.Load()
		if e, d, ok = c.visibleTool(name, who); !ok {
			notFound(c)
			return
		}
	}
	rec.Original, rec.Server, rec.Outcome = e.Original, e.Server, ""
	rec.Decision, rec.Rule = observe.DecisionWords(d)
	meta, ok := ctx.Value(requestMetaKey{}).(json.RawMessage)
	if !ok {
		meta = fields["_meta"]
	}
	re := callEra(ss, meta)
	// The rest runs on the caller's goroutine (for stdio, the one that reads
	// the client: no hand-off per call) unless it may wait (mayWait).
	send := func() {
		if !re.modern {
			// Only a modern client retries with input; a legacy client's
			// fields of that name are not the proxy's to pass on raw.
			delete(fields, "requestState")
			delete(fields, "inputResponses")
		} else if _, retry := fields["requestState"]; retry && s.resumeCall(ctx, ss, re, name, e.Server, fields, finish) {
			return
		}
		if outcome, text := s.guard.Refuse(ctx, name, d, fields["arguments"], id.Key, time.Now()); outcome != "" {
			rec.Outcome = outcome
			done(toolError("%s", text), nil)
			return
		}
		b := c.gen.byName[e.Server]
		b.EnsureUp(ctx)
		st, up, _ := b.Snapshot()
		if st != stateUp || up == nil {
			rec.Outcome = "unavailable"
			done(toolError("%s", b.Unavailable()), nil)
			return
		}
		var fixed *mcp.ServerSession // the session whose own process runs the call
		if b.PerIdentity() {         // the caller's own credential (identityconn.go)
			own, err := s.identityUpstream(ctx, b)
			var ae *upstream.AuthError
			switch {
			case errors.As(err, &ae):
				rec.Outcome = "unauthorized"
				done(toolError("%v; nothing was executed", ae), nil)
				return
			case err != nil:
				rec.Outcome = "unavailable"
				done(toolError("upstream %q could not connect with this caller's credential: %v; nothing was executed", b.name, err), nil)
				return
			}
			up = own
		} else if iso, err := s.sessionUpstream(ctx, b, ss); err != nil {
			rec.Outcome = "unavailable"
			done(toolError("upstream %q could not start a process for this client: %v; nothing was executed", b.name, err), nil)
			return
		} else if iso != nil {
			up, fixed = iso, ss
		}
		if outcome, text := s.guard.RefuseRate(ctx, name, d.Limits, id.Key); outcome != "" {
			rec.Outcome = outcome
			done(toolError("%s", text), nil)
			return
		}

		timeout := b.cfg.CallTimeout
		if t := d.Limits.CallTimeout; t > 0 && t < timeout {
			timeout = t
		}
		ttl := s.opts.StateTTL
		if ttl <= 0 || ttl > timeout {
			ttl = timeout
		}
		bind := era.Binding{Method: "tools/call", Name: name, Upstream: b.name, Principal: session.Principal(ctx, ss, s.opts.WaitForClient, re.client)}
		callCtx := ctx // the call's own context: ctx, or a bridged call's, which outlives each of its requests
		if d.Confirm {
			// A person approves the exact call first (proxy/confirm); a modern
			// client is asked through a parked call, as for a server's input.
			if re.modern {
				var err error
				if callCtx, pc, err = s.newParked(ctx, bind, re.caps, max(ttl, s.approver.TTL()), finish); err != nil {
					done(nil, err)
					return
				}
				finish = pc.finish
			}
			ok, ans := s.approver.Confirm(callCtx, confirm.Call{Session: ss, Caps: re.caps, Principal: bind.Principal,
				Server: b.name, Exposed: name, Original: e.Original, Decision: d}, fields)
			rec.Confirm, rec.Approval = ans.Confirm, ans.Approval
			if !ok {
				rec.Outcome = ans.Outcome
				done(ans.Result, ans.Err)
				return
			}
		}
		if re.modern && ss != nil && !up.Modern() {
			switch {
			case pc != nil:
			case !mayAsk(re.caps):
				// Nothing the server may ask could be answered: no call is
				// parked, and its questions get the error a parked call
				// would give (askParked).
				callCtx = context.WithValue(ctx, noInputKey{}, b.name)
			default:
				var err error
				if callCtx, pc, err = s.newParked(ctx, bind, re.caps, ttl, finish); err != nil {
					done(nil, err)
					return
				}
				finish = pc.finish
			}
			if fixed == nil && s.perCall(b, ss, up) {
				// No session to tie the server's requests to: a process
				// for this call alone, stopped when it ends.
				one, err := b.CallUpstream(ss)
				if err != nil {
					rec.Outcome = "unavailable"
					done(toolError("upstream %q could not start a process for this call: %v; nothing was executed", b.name, err), nil)
					return
				}
				cleanups = append(cleanups, func() { go func() { _ = one.Close() }() })
				up, fixed = one, ss
			}
		}

		var err error
		fields["name"] = wire.AppendString(nil, e.Original)
		if re.modern {
			// The era's own keys describe this request, not the upstream's.
			stripEraMeta(fields)
		}
		if up.Modern() {
			// A modern server sees the capabilities of the client that asks.
			var caps json.RawMessage
			if caps, err = upstreamCapsJSON(re.caps, b); err == nil {
				fields["_meta"], err = declareCaps(fields["_meta"], caps)
			}
			if err != nil {
				done(nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("invalid _meta: %v", err)})
				return
			}
		}
		if meta, ok := fields["_meta"]; ok {
			var release func()
			var route string
			if fields["_meta"], route, release, err = s.progress.mapToken(callCtx, ss, meta, b, fixed); err != nil {
				done(nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("invalid _meta: %v", err)})
				return
			}
			cleanups = append(cleanups, release)
			if pc != nil {
				pc.setProgressRoute(route)
			}
		}
		traceCtx := callCtx // with the upstream call's span, when traced
		if s.obs.Tracing() {
			var meta json.RawMessage
			// callCtx is ctx, or a bridged call's context, which outlives the
			// request but keeps its values, the request's span among them.
			if traceCtx, meta, upSpan, err = s.obs.TraceUpstream(callCtx, "tools/call", e.Original, b.name, fields["_meta"]); err != nil {
				done(nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("invalid _meta: %v", err)})
				return
			} else if meta != nil {
				fields["_meta"] = meta
			}
		}
		params := wire.JoinParams(fields)

		cctx, cancel := context.WithTimeout(traceCtx, timeout)
		cleanups = append(cleanups, cancel, b.Enter(callCtx, ss))
		var onResult, settle func(json.RawMessage, error)
		onResult = func(raw json.RawMessage, err error) {
			if err != nil || re.modern || ss == nil || !jsonscan.Contains(raw, markInputRequired) {
				settle(raw, err)
				return
			}
			// A modern server may ask a legacy client (cell 4): ask the client,
			// then call again with its answers. The client may take a person's
			// time: not on the goroutine that reads the server's output.
			go func() {
				next, final := s.inputRound(cctx, ss, b, re, raw, fields, &rounds)
				switch {
				case final:
					settle(raw, nil)
				case next.err != nil:
					settle(nil, next.err)
				case next.raw != nil:
					up.CallToolRawAsync(cctx, next.raw, onResult)
				default:
					rec.Outcome = "input rounds exceeded"
					done(toolError("upstream %q asked for input more than %d times in one call of %q (max_input_rounds); the call was stopped and may have partly run. Retry, or raise max_input_rounds in [protocol]",
						b.name, s.maxInputRounds(), e.Original), nil)
				}
			}()
		}
		settle = func(raw json.RawMessage, err error) {
			if err != nil {
				var rpcErr *jsonrpc.Error
				var authErr *upstream.AuthError
				switch {
				case errors.As(err, &authErr): // a 401 no refresh cured: say how to authorize
					rec.Outcome = "unauthorized"
					b.forgetIdentity(ctx, err)
					done(toolError("%v; nothing was executed", authErr), nil)
				case errors.As(err, &rpcErr):
					done(nil, rpcErr)
				case callCtx.Err() != nil:
					rec.Outcome = "cancelled"
					done(nil, callCtx.Err())
				case errors.Is(err, context.DeadlineExceeded):
					rec.Outcome = "timeout"
					done(toolError("upstream %q did not answer %q within %s; the call was cancelled upstream and may have partly run. Retry with smaller input, or raise call_timeout for this server",
						b.name, e.Original, timeout), nil)
				case errors.Is(err, upstream.ErrNotReading):
					rec.Outcome = "not reading"
					done(toolError("upstream %q is not reading its input (it may be stuck): %q was not sent, nothing was executed. Retry later; if it persists, the server needs a restart",
						b.name, e.Original), nil)
				case errors.Is(err, upstream.ErrClosed):
					rec.Outcome = "upstream exited"
					done(toolError("upstream %q exited while running %q (after %s) and is being restarted; the call may or may not have taken effect, so check before retrying (%v)",
						b.name, e.Original, time.Since(start).Round(time.Millisecond), err), nil)
				default:
					rec.Outcome = "error"
					done(toolError("upstream %q failed to run %q: %v", b.name, e.Original, err), nil)
				}
				return
			}
			// Secrets first: spend counting and labels never see one
			// (proxy/guard/mask.go).
			raw = s.guard.Mask(raw)
			settled.Store(true)
			if len(d.Limits.Budgets) > 0 {
				rec.Spend = spendLines(s.guard.CountSpend(context.WithoutCancel(cctx), b.log, name, d, raw, id.Key, time.Now()))
			}
			if naming.MayContainURIs(raw) {
				raw = c.filterResultResources(b.name, raw, who)
			}
			if ss != nil {
				raw = adaptCallResult(raw, sessionVersion(ss))
			}
			if d.Label { // after adapting: the text made of structuredContent for an old client is the server's too
				raw = s.guard.Label(raw, b.name, name)
			}
			if capped, cut := s.guard.Cap(raw, d); cut {
				raw = capped
				rec.Outcome = "ok, cut to max_result_bytes"
			}
			if re.modern && jsonscan.Contains(raw, markRequestState) {
				if raw, err = s.wrapState(raw, bind, ttl); err != nil {
					rec.Outcome = "error"
					done(nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()})
					return
				}
			}
			done(raw, nil)
		}
		up.CallToolRawAsync(cctx, params, onResult)
	}
	if s.mayWait(c.gen.byName[e.Server], d, re, fields) {
		go send()
		return
	}
	send()
}

var (
	markRequestState  = []byte(`"requestState"`)
	markInputRequired = []byte(`"input_required"`)
)

// filterResultResources rewrites the resource URIs in a raw result (resource
// links and embedded resources) outward for server, and withholds those
// whose read the policy would refuse (see catalog.upstreamResource). The
// lean path and the SDK path both come through here.
func (c *catalog) filterResultResources(server string, raw json.RawMessage, who policy.Identity) json.RawMessage {
	if !c.filtersResources(server) { // unprefixed and unguarded: URIs are kept
		return raw
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		if c.rules.GuardsResources(server) {
			return toolError("the result of server %q could not be decoded to apply the resource policy, so it was withheld: %v", server, err)
		}
		return raw
	}
	if !naming.FilterContentResources(v, func(u string) (string, bool) { return c.upstreamResource(server, u, who) }) {
		return raw
	}
	out, err := json.Marshal(v)
	if err != nil {
		if c.rules.GuardsResources(server) {
			return toolError("the result of server %q could not be encoded after applying the resource policy, so it was withheld: %v", server, err)
		}
		return raw
	}
	return out
}

// handleCallTool is the typed tools/call handler the SDK registers for every
// exposed tool. The routing middleware answers tools/call first (serveCallTool,
// httplean.go), so it runs only for a request that middleware passes on.
func (s *Server) handleCallTool(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	raw, err := s.callToolRequest(ctx, req)
	if err != nil {
		return nil, err
	}
	return typedCallResult(req.Params.Name, raw)
}

// callToolRequest is a tools/call that the SDK decoded (HTTP, and stdio
// frames that the stdio lean path passes on), forwarded as the stdio lean
// path forwards one: it returns the raw result of callTool.
func (s *Server) callToolRequest(ctx context.Context, req *mcp.CallToolRequest) (json.RawMessage, error) {
	if req.Session != nil && req.Session.ID() != "" {
		var done func()
		ctx, done = s.sessions.Calls.Track(ctx, req.Session.ID())
		defer done()
	}
	fields := make(map[string]json.RawMessage, 5)
	if len(req.Params.Arguments) > 0 {
		fields["arguments"] = req.Params.Arguments
	}
	if len(req.Params.Meta) > 0 {
		m, err := json.Marshal(req.Params.Meta)
		if err != nil {
			return nil, err
		}
		fields["_meta"] = m
	}
	if len(req.Params.InputResponses) > 0 {
		m, err := json.Marshal(req.Params.InputResponses)
		if err != nil {
			return nil, err
		}
		fields["inputResponses"] = m
	}
	if req.Params.RequestState != "" {
		fields["requestState"], _ = json.Marshal(req.Params.RequestState)
	}
	return s.callTool(ctx, req.Session, req.Params.Name, fields)
}

// typedCallResult decodes a raw tools/call result of the tool name for the
// SDK to encode again.
func typedCallResult(name string, raw json.RawMessage) (*mcp.CallToolResult, error) {
	var res mcp.CallToolResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("upstream result for %q could not be decoded: %v", name, err)}
	}
	if res.Content == nil {
		res.Content = []mcp.Content{} // "content" is required
	}
	return &res, nil
}

// progressRoutes maps the progress tokens the proxy sends upstream back to the
// downstream session and token that asked. A token is random (an upstream
// cannot guess another call's) and is honoured only from the upstream process
// it was sent to, so no server can inject progress into a call on another.
type progressRoutes struct {
	mu     sync.Mutex
	routes map[string]progressRoute // guarded by mu
}

type progressRoute struct {
	ctx    context.Context
	ss     *mcp.ServerSession
	token  any
	b      *backend                              // the server the call went to
	fixed  *mcp.ServerSession                    // and ss, if it went to ss's own process of b
	remote func(*mcp.ProgressNotificationParams) // in place of ss: a lean HTTP call's stream (httpcall.go), or a retry forwarded by another replica (retryrelay.go)
}

// mapToken replaces a progress token in a raw _meta object with a token unique
// across upstreams and sessions, for a call sent to b's process (fixed's own,
// if fixed is set), and returns it (the route's id; empty when there is no
// token) and a func that forgets it.
func (p *progressRoutes) mapToken(ctx context.Context, ss *mcp.ServerSession, meta json.RawMessage, b *backend, fixed *mcp.ServerSession) (json.RawMessage, string, func(), error) {
	noop := func() {}
	sink, _ := ctx.Value(progressSinkKey{}).(progressSink) // a lean HTTP call's stream (httpcall.go)
	// A _meta object without escapes that names the key once at most is
	// read and rewritten on its bytes: the token, if any, is the member the
	// scanner finds (wire.MemberSpan). Any other _meta is decoded and encoded
	// again, which leaves one token whatever the server's decoder keeps of
	// duplicate keys: never one the client chose.
	var rawTok json.RawMessage
	var start, end int
	trimmed := bytes.TrimSpace(meta)
	fast := len(trimmed) > 0 && trimmed[0] == '{' && bytes.IndexByte(meta, '\\') < 0 && bytes.Count(meta, markProgressToken) <= 1
	var m map[string]json.RawMessage
	if fast {
		if !jsonscan.Valid(meta) {
			return nil, "", noop, errors.New("_meta is not valid JSON")
		}
		var found bool
		if start, end, found = wire.MemberSpan(meta, "progressToken"); found {
			rawTok = meta[start:end]
		}
	} else {
		if err := json.Unmarshal(meta, &m); err != nil {
			return nil, "", noop, err
		}
		rawTok = m["progressToken"]
	}
	if rawTok == nil || ss == nil && sink == nil {
		return meta, "", noop, nil
	}
	tok, err := decodeProgressToken(rawTok)
	if err != nil {
		return nil, "", noop, err
	}
	id := "mf-progress-" + rand.Text()
	quoted := []byte(`"` + id + `"`) // base32: nothing to escape
	var out json.RawMessage
	if fast {
		out = wire.Splice(meta, start, end, quoted)
	} else {
		m["progressToken"] = quoted
		if out, err = json.Marshal(m); err != nil {
			return nil, "", noop, err
		}
	}
	p.mu.Lock()
	if p.routes == nil {
		p.routes = make(map[string]progressRoute)
	}
	p.routes[id] = progressRoute{ctx: ctx, ss: ss, token: tok, b: b, fixed: fixed, remote: sink}
	p.mu.Unlock()
	return out, id, func() {
		p.mu.Lock()
		delete(p.routes, id)
		p.mu.Unlock()
	}, nil
}

var markProgressToken = []byte(`"progressToken"`)

// decodeProgressToken decodes a client's progress token as it was written:
// a string, or a number kept exact (json.Number), so that an integer beyond
// 2^53 comes back to the client unchanged.
func decodeProgressToken(raw json.RawMessage) (any, error) {
	raw = bytes.TrimSpace(raw)
	switch {
	case len(raw) == 0:
	case raw[0] == '"' && bytes.IndexByte(raw, '\\') < 0 && utf8.Valid(raw) && jsonscan.Valid(raw):
		return string(raw[1 : len(raw)-1]), nil // a plain string: its bytes
	case (raw[0] == '-' || '0' <= raw[0] && raw[0] <= '9') && jsonscan.Valid(raw):
		return json.Number(raw), nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var tok any
	if err := dec.Decode(&tok); err != nil {
		return nil, err
	}
	return tok, nil
}

// rebind sends the progress of route id from now on to the request that
// resumed a bridged call (a modern client's retry: over HTTP a request of
// its own, whose stream is the one the client reads), with that request's
// token if it has one, else the call's first.
func (p *progressRoutes) rebind(id string, ctx context.Context, ss *mcp.ServerSession, meta json.RawMessage) {
	if id == "" || ss == nil {
		return
	}
	var m struct {
		Token json.RawMessage `json:"progressToken"`
	}
	var tok any
	hasTok := len(meta) > 0 && json.Unmarshal(meta, &m) == nil && len(m.Token) > 0
	if hasTok {
		var err error
		tok, err = decodeProgressToken(m.Token)
		hasTok = err == nil && tok != nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	rt, ok := p.routes[id]
	if !ok {
		return
	}
	rt.ctx, rt.ss, rt.remote = ctx, ss, nil
	if hasTok {
		rt.token = tok
	}
	p.routes[id] = rt
}

// rebindRemote sends the progress of route id from now on to send: the
// replica that forwarded a retry of the call, which sends it to the retry's
// own request.
func (p *progressRoutes) rebindRemote(id string, send func(*mcp.ProgressNotificationParams)) {
	if id == "" {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if rt, ok := p.routes[id]; ok {
		rt.ss, rt.remote = nil, send
		p.routes[id] = rt
	}
}

// forward sends a progress notification from b's process (fixed's own, if
// fixed is set) to the session that asked, with its own token. Unknown or
// finished tokens, and tokens that were sent to another process, are dropped.
func (p *progressRoutes) forward(b *backend, fixed *mcp.ServerSession, params *mcp.ProgressNotificationParams) {
	if params == nil {
		return
	}
	id, ok := params.ProgressToken.(string)
	if !ok {
		return
	}
	p.mu.Lock()
	rt, ok := p.routes[id]
	p.mu.Unlock()
	if !ok {
		return
	}
	if rt.b != b || rt.fixed != fixed {
		b.log.Warn("progress notification dropped: its token belongs to a call on another server or process", "token", id)
		return
	}
	fwd := *params
	fwd.ProgressToken = rt.token
	switch {
	case rt.remote != nil:
		rt.remote(&fwd)
	case rt.ss != nil:
		_ = rt.ss.NotifyProgress(rt.ctx, &fwd)
	}
}
