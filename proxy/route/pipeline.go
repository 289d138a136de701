package route

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manifold-mcp/manifold/internal/jsonscan"
	"github.com/manifold-mcp/manifold/internal/telemetry"
	"github.com/manifold-mcp/manifold/policy"
	"github.com/manifold-mcp/manifold/proxy/bridge"
	"github.com/manifold-mcp/manifold/proxy/confirm"
	"github.com/manifold-mcp/manifold/proxy/era"
	"github.com/manifold-mcp/manifold/proxy/internal/wire"
	"github.com/manifold-mcp/manifold/proxy/naming"
	"github.com/manifold-mcp/manifold/proxy/observe"
	"github.com/manifold-mcp/manifold/proxy/session"
	"github.com/manifold-mcp/manifold/upstream"
	"github.com/manifold-mcp/manifold/upstream/supervise"
)

// The call pipeline (ARCHITECTURE §1 "The house"): every tools/call, from
// the stdio and HTTP lean paths and from the SDK's, goes through the same
// ordered steps, and its result through the same ordered filters. A step
// reads and sets the call's state and either lets it go on or ends it (with
// the answer the caller gets, audited once); a filter rewrites a result. Each
// is supplied by the room that owns its concern; the order is written once,
// in the composition's Pipeline (the root's proxy/routing.go), and adding one
// is its room's code plus one line there.
//
//	resolve   the exposed name → the server and tool, the policy decision (catalog)
//	admit     argument limits, budgets, rates (guard), a person's approval (confirm)
//	connect   the server up, the caller's own process or credential (upstream/supervise)
//	bridge    a call across eras: retried state, parked calls (bridge)
//	send      the upstream's request: its name, era fields, progress, trace (era, relay, observe)
//	filters   masking, spend, URIs, era adaptation, labels, caps, sealed state

// ToolCall is one tools/call on its way through the pipeline.
type ToolCall struct {
	r      *Route
	ctx    context.Context // the request's
	ss     *mcp.ServerSession
	name   string                     // the exposed name
	fields map[string]json.RawMessage // the params but "name", forwarded as they are unless a step says otherwise
	finish func(json.RawMessage, error)
	start  time.Time
	rec    observe.Record

	id  session.Identity
	who policy.Identity

	// Set by resolve.
	cat Generation
	e   naming.Entry
	d   policy.Decision
	re  era.Request

	// Set by connect and bind.
	b       Server
	up      *upstream.Upstream
	fixed   *mcp.ServerSession // the session whose own process runs the call
	timeout time.Duration
	ttl     time.Duration
	bind    era.Binding

	callCtx  context.Context // the call's own context: ctx, or a bridged call's, which outlives each of its requests
	traceCtx context.Context // callCtx with the upstream call's span, when traced
	cctx     context.Context // traceCtx with the call's timeout
	pc       *bridge.Call    // the bridge of a modern client's call on a legacy server
	rounds   int             // rounds of input a legacy client gave a modern server
	cleanups []func()
	upSpan   *telemetry.Span // the upstream call's, when traced
	settled  atomic.Bool     // the result was masked (maskingFinish need not)
}

// Step is one step of the pipeline: it reports whether the call goes
// on; a step that ends the call has answered it (call.end).
type Step func(*ToolCall) bool

// Filter rewrites an upstream's successful result; one that ends the
// call reports false (having answered it).
type Filter func(k *ToolCall, raw json.RawMessage) (json.RawMessage, bool)

// Call is the root's startCall on the goroutine it runs on: it routes,
// decides and sends the call, and finish gets the outcome exactly once.
func (r *Route) Call(ctx context.Context, ss *mcp.ServerSession, name string, fields map[string]json.RawMessage, finish func(json.RawMessage, error)) {
	s := r.host
	k := &ToolCall{r: r, ss: ss, name: name, fields: fields}
	finish = r.guard.MaskingFinish(finish, k.settled.Load)
	if r.obs.Tracing() {
		ctx, finish = s.CallSpan(ctx, ss, name, fields, finish)
	}
	if s.ServeSurface(ctx, ss, name, fields, finish) {
		return
	}
	k.ctx, k.finish, k.start = ctx, finish, time.Now()
	k.rec = observe.Record{Method: "tools/call", Exposed: name, Decision: "denied", Outcome: "unknown tool"}
	k.rec.Via = s.Via(ctx)
	k.id = session.IdentityFrom(ctx)
	k.who = k.id.Policy()
	k.rec.Identity = k.id.Subject
	// A client that calls before (or without) listing is a client too: its
	// mode is decided here as a list would decide it, and status shows it.
	k.rec.Catalog = s.Mode(ctx, ss, true)
	for _, step := range r.pipe.Steps {
		if !step(k) {
			return
		}
	}
	if r.mayWait(k.b, k.d, k.re, fields) {
		go k.send()
		return
	}
	k.send()
}

// send runs SendSteps and sends the call to its server.
func (k *ToolCall) send() {
	for _, step := range k.r.pipe.SendSteps {
		if !step(k) {
			return
		}
	}
	params := wire.JoinParams(k.fields)
	var cancel context.CancelFunc
	k.cctx, cancel = context.WithTimeout(k.traceCtx, k.timeout)
	k.cleanups = append(k.cleanups, cancel, k.b.Enter(k.callCtx, k.ss))
	k.up.CallToolRawAsync(k.cctx, params, k.onResult)
}

// end answers the call with raw or err, once: it releases what the call
// held, ends its span and writes its audit record.
func (k *ToolCall) end(raw json.RawMessage, err error) {
	for i := len(k.cleanups) - 1; i >= 0; i-- {
		k.cleanups[i]()
	}
	if k.upSpan != nil {
		k.upSpan.End(observe.ErrType(raw, err))
	}
	if r := k.r; r.obs.Records() {
		rec := &k.rec
		rec.Rounds = k.rounds
		if k.pc != nil {
			rec.Rounds = k.pc.Rounds()
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
		if k.ss == nil { // a 2026-07-28 request over HTTP: the client names itself
			rec.Client = r.host.ClientName(k.ctx)
		}
		RecordSession(rec, k.ss)
		r.obs.Record(*rec, k.start, k.fields["arguments"])
	}
	k.finish(raw, err)
}

// refuse ends the call with an isError result whose text says why, the
// audit outcome being outcome.
func (k *ToolCall) refuse(outcome, format string, args ...any) bool {
	k.rec.Outcome = outcome
	k.end(wire.ToolError(format, args...), nil)
	return false
}

// fail ends the call with a protocol error.
func (k *ToolCall) fail(err error) bool {
	k.end(nil, err)
	return false
}

// RefuseStopping refuses every call once Close has begun (drain.go): no
// call is handed to an upstream that is stopping.
func (k *ToolCall) RefuseStopping() bool {
	res, stopping := k.r.host.Stopping()
	if !stopping {
		return true
	}
	k.rec.Outcome = "stopping"
	k.end(res, nil)
	return false
}

// Resolve finds the tool the exposed name is and the policy's decision on
// it for the caller, waiting for the upstreams' initial start when it is
// not (yet) visible; and reads the era of the request.
func (k *ToolCall) Resolve() bool {
	s := k.r.host
	c := s.Catalog()
	e, d, ok := c.View().VisibleTool(k.name, k.who)
	if !ok {
		select {
		case <-s.Ready():
			return k.notFound(c)
		default:
		}
		// Upstreams are still starting: the tool may be about to appear.
		s.WaitReady(k.ctx)
		c = s.Catalog()
		if e, d, ok = c.View().VisibleTool(k.name, k.who); !ok {
			return k.notFound(c)
		}
	}
	k.cat, k.e, k.d = c, e, d
	k.b = c.Server(e.Server)
	k.rec.Original, k.rec.Server, k.rec.Outcome = e.Original, e.Server, ""
	k.rec.Decision, k.rec.Rule = observe.DecisionWords(d)
	meta, ok := era.RequestMeta(k.ctx)
	if !ok {
		meta = k.fields["_meta"]
	}
	k.re = era.OfRequest(k.ss, meta)
	return true
}

// notFound ends a call of a name that is no visible tool of the caller's:
// held for review, hidden (audited with its rule), of a server that is
// down, or unknown.
func (k *ToolCall) notFound(g Generation) bool {
	name, rec, c := k.name, &k.rec, g.View()
	if msg, held := c.HeldMessage("tool", name); held { // awaits review (pinned.go): say so
		he, _ := c.Tools.Lookup(name)
		rec.Server, rec.Original, rec.Outcome, rec.Rule = he.Server, he.Original, "awaits review", "pin"
		return k.fail(&jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: msg})
	}
	if he, found := c.Tools.Lookup(name); found { // hidden: audited with its rule
		rec.Server, rec.Original = he.Server, he.Original
		rec.Outcome = "hidden"
		_, rec.Rule = observe.DecisionWords(c.Decision("tool\x00"+name, k.who))
	} else if b := g.DownServer(name); b != nil {
		rec.Server, rec.Outcome = b.Name(), "unavailable"
		k.end(wire.ToolError("%s", b.Unavailable()), nil)
		return false
	}
	return k.fail(c.UnknownTool(name))
}

// Retried takes the retry of a call with the input a server asked for
// (bridge.Retried).
func (k *ToolCall) Retried() bool {
	return !k.r.bridge.Retried(k.ctx, k.ss, k.re, k.name, k.e.Server, k.fields, k.finish)
}

// Admit refuses a call whose arguments or budgets its limits refuse.
func (k *ToolCall) Admit() bool {
	if outcome, text := k.r.guard.Refuse(k.ctx, k.name, k.d, k.fields["arguments"], k.id.Key, time.Now()); outcome != "" {
		return k.refuse(outcome, "%s", text)
	}
	return true
}

// AdmitRate refuses a call over its rate limit.
func (k *ToolCall) AdmitRate() bool {
	if outcome, text := k.r.guard.RefuseRate(k.ctx, k.name, k.d.Limits, k.id.Key); outcome != "" {
		return k.refuse(outcome, "%s", text)
	}
	return true
}

// Connect brings the call's server up (a lazy one starts) and finds the
// process or connection that runs it: the shared one, the caller's own
// credential's (identityconn.go), or the client session's own process.
func (k *ToolCall) Connect() bool {
	s, b := k.r.host, k.b
	b.EnsureUp(k.ctx)
	st, up, _ := b.Snapshot()
	if st != supervise.StateUp || up == nil {
		return k.refuse("unavailable", "%s", b.Unavailable())
	}
	if b.PerIdentity() {
		own, err := s.IdentityUpstream(k.ctx, b)
		var ae *upstream.AuthError
		switch {
		case errors.As(err, &ae):
			return k.refuse("unauthorized", "%v; nothing was executed", ae)
		case err != nil:
			return k.refuse("unavailable", "upstream %q could not connect with this caller's credential: %v; nothing was executed", b.Name(), err)
		}
		up = own
	} else if iso, err := s.SessionUpstream(k.ctx, b, k.ss); err != nil {
		return k.refuse("unavailable", "upstream %q could not start a process for this client: %v; nothing was executed", b.Name(), err)
	} else if iso != nil {
		up, k.fixed = iso, k.ss
	}
	k.up = up
	return true
}

// BindLimits settles the call's timeout (the server's, or the policy's if
// shorter), the lifetime of its sealed state, and what that state is bound
// to.
func (k *ToolCall) BindLimits() bool {
	r := k.r
	k.timeout = k.b.CallTimeout()
	if t := k.d.Limits.CallTimeout; t > 0 && t < k.timeout {
		k.timeout = t
	}
	k.ttl = r.stateTTL
	if k.ttl <= 0 || k.ttl > k.timeout {
		k.ttl = k.timeout
	}
	k.bind = era.Binding{Method: "tools/call", Name: k.name, Upstream: k.b.Name(), Principal: session.Principal(k.ctx, k.ss, r.waitForClient, k.re.Client)}
	k.callCtx = k.ctx
	return true
}

// Confirm has a person approve the exact call first (proxy/confirm); a
// modern client is asked through a parked call, as for a server's input
// (bridge.ForApproval).
func (k *ToolCall) Confirm() bool {
	if !k.d.Confirm {
		return true
	}
	s := k.r
	var err error
	if k.callCtx, k.pc, err = s.bridge.ForApproval(k.ctx, k.re, k.bind, max(k.ttl, s.approver.TTL()), k.finish); err != nil {
		return k.fail(err)
	} else if k.pc != nil {
		k.finish = k.pc.Finish
	}
	ok, ans := s.approver.Confirm(k.callCtx, confirm.Call{Session: k.ss, Caps: k.re.Caps, Principal: k.bind.Principal,
		Server: k.b.Name(), Exposed: k.name, Original: k.e.Original, Decision: k.d}, k.fields)
	k.rec.Confirm, k.rec.Approval = ans.Confirm, ans.Approval
	if !ok {
		k.rec.Outcome = ans.Outcome
		k.end(ans.Result, ans.Err)
		return false
	}
	return true
}

// Park bridges a modern client's call on a legacy server (bridge.OnLegacy):
// the server's requests during the call become input the client is asked
// for, through a parked call; with no session to tie them to, the call gets
// a process of its own.
func (k *ToolCall) Park() bool {
	s, b := k.r, k.b
	callCtx, pc, bridged, err := s.bridge.OnLegacy(k.ctx, k.callCtx, k.ss, k.re, k.up.Modern(), b.Name(), k.bind, k.ttl, k.pc, k.finish)
	switch {
	case err != nil:
		k.callCtx, k.pc = callCtx, pc
		return k.fail(err)
	case !bridged:
		return true
	case pc != k.pc:
		k.finish = pc.Finish
	}
	k.callCtx, k.pc = callCtx, pc
	if k.fixed == nil && s.perCall(b, k.ss, k.up) {
		// No session to tie the server's requests to: a process
		// for this call alone, stopped when it ends.
		one, err := b.CallUpstream(k.ss)
		if err != nil {
			return k.refuse("unavailable", "upstream %q could not start a process for this call: %v; nothing was executed", b.Name(), err)
		}
		k.cleanups = append(k.cleanups, func() { go func() { _ = one.Close() }() })
		k.up, k.fixed = one, k.ss
	}
	return true
}

// UpstreamParams makes the params the upstream gets: its own name of the
// tool, the era's fields of this request taken out, the capabilities of the
// client for a modern server, the progress token mapped to one the proxy
// routes back (relay), and the upstream call's trace context.
func (k *ToolCall) UpstreamParams() bool {
	s, b, fields := k.r, k.b, k.fields
	var err error
	fields["name"] = wire.AppendString(nil, k.e.Original)
	// The era's own keys describe this request, not the upstream's; a
	// modern server sees the capabilities of the client that asks.
	if err = era.ForUpstream(fields, k.re, k.up.Modern(), b.CapsMemo(), b.PerSession()); err != nil {
		return k.fail(&jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("invalid _meta: %v", err)})
	}
	if meta, ok := fields["_meta"]; ok {
		var release func()
		var route string
		if fields["_meta"], route, release, err = s.relay.MapToken(k.callCtx, k.ss, meta, b, k.fixed); err != nil {
			return k.fail(&jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("invalid _meta: %v", err)})
		}
		k.cleanups = append(k.cleanups, release)
		if k.pc != nil {
			k.pc.SetProgressRoute(route)
		}
	}
	k.traceCtx = k.callCtx
	if s.obs.Tracing() {
		var meta json.RawMessage
		// callCtx is ctx, or a bridged call's context, which outlives the
		// request but keeps its values, the request's span among them.
		if k.traceCtx, meta, k.upSpan, err = s.obs.TraceUpstream(k.callCtx, "tools/call", k.e.Original, b.Name(), fields["_meta"]); err != nil {
			return k.fail(&jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("invalid _meta: %v", err)})
		} else if meta != nil {
			fields["_meta"] = meta
		}
	}
	return true
}

// onResult gets the upstream's answer. A modern server may ask a legacy
// client for input (cell 4, proxy/bridge): the client is asked, then the server
// called again with its answers, on a goroutine of its own (the client may
// take a person's time, not on the goroutine that reads the server's
// output).
func (k *ToolCall) onResult(raw json.RawMessage, err error) {
	if err != nil || !bridge.AsksInput(k.re, k.ss, raw) {
		k.settle(raw, err)
		return
	}
	go func() {
		s, b := k.r, k.b
		next, final := s.bridge.InputRound(k.cctx, k.ss, b, k.re.Caps, raw, k.fields, &k.rounds)
		switch {
		case final:
			k.settle(raw, nil)
		case next.Err != nil:
			k.settle(nil, next.Err)
		case next.Raw != nil:
			k.up.CallToolRawAsync(k.cctx, next.Raw, k.onResult)
		default:
			k.refuse("input rounds exceeded", "upstream %q asked for input more than %d times in one call of %q (max_input_rounds); the call was stopped and may have partly run. Retry, or raise max_input_rounds in [protocol]",
				b.Name(), s.bridge.MaxInputRounds(), k.e.Original)
		}
	}()
}

// settle ends the call with the upstream's final answer: an error says to
// the model what happened and what to do; a result goes through the
// filters.
func (k *ToolCall) settle(raw json.RawMessage, err error) {
	if err != nil {
		k.upstreamFailed(err)
		return
	}
	for _, f := range k.r.pipe.Filters {
		var ok bool
		if raw, ok = f(k, raw); !ok {
			return
		}
	}
	k.end(raw, nil)
}

// upstreamFailed ends a call whose upstream request failed.
func (k *ToolCall) upstreamFailed(err error) {
	b, orig := k.b, k.e.Original
	var rpcErr *jsonrpc.Error
	var authErr *upstream.AuthError
	switch {
	case errors.As(err, &authErr): // a 401 no refresh cured: say how to authorize
		k.r.host.ForgetIdentity(k.ctx, b, err)
		k.refuse("unauthorized", "%v; nothing was executed", authErr)
	case errors.As(err, &rpcErr):
		k.end(nil, rpcErr)
	case k.callCtx.Err() != nil:
		k.rec.Outcome = "cancelled"
		k.end(nil, k.callCtx.Err())
	case errors.Is(err, context.DeadlineExceeded):
		k.refuse("timeout", "upstream %q did not answer %q within %s; the call was cancelled upstream and may have partly run. Retry with smaller input, or raise call_timeout for this server",
			b.Name(), orig, k.timeout)
	case errors.Is(err, upstream.ErrNotReading):
		k.refuse("not reading", "upstream %q is not reading its input (it may be stuck): %q was not sent, nothing was executed. Retry later; if it persists, the server needs a restart",
			b.Name(), orig)
	case errors.Is(err, upstream.ErrClosed):
		k.refuse("upstream exited", "upstream %q exited while running %q (after %s) and is being restarted; the call may or may not have taken effect, so check before retrying (%v)",
			b.Name(), orig, time.Since(k.start).Round(time.Millisecond), err)
	default:
		k.refuse("error", "upstream %q failed to run %q: %v", b.Name(), orig, err)
	}
}

// MaskResult masks the secrets Manifold knows (proxy/guard/mask.go).
func (k *ToolCall) MaskResult(raw json.RawMessage) (json.RawMessage, bool) {
	raw = k.r.guard.Mask(raw)
	k.settled.Store(true)
	return raw, true
}

// CountSpend counts what the result reports against the call's budgets.
func (k *ToolCall) CountSpend(raw json.RawMessage) (json.RawMessage, bool) {
	if len(k.d.Limits.Budgets) > 0 {
		k.rec.Spend = spendLines(k.r.guard.CountSpend(context.WithoutCancel(k.cctx), k.b.Log(), k.name, k.d, raw, k.id.Key, time.Now()))
	}
	return raw, true
}

// RewriteURIs rewrites the server's resource URIs in the result as the
// client knows them.
func (k *ToolCall) RewriteURIs(raw json.RawMessage) (json.RawMessage, bool) {
	if naming.MayContainURIs(raw) {
		raw = k.cat.View().FilterResultResources(k.b.Name(), raw, k.who)
	}
	return raw, true
}

// AdaptResult leaves out of the result what the client's protocol version
// does not have.
func (k *ToolCall) AdaptResult(raw json.RawMessage) (json.RawMessage, bool) {
	if k.ss != nil {
		raw = era.AdaptCallResult(raw, era.SessionVersion(k.ss))
	}
	return raw, true
}

// LabelResult labels the result as data when the policy says so.
func (k *ToolCall) LabelResult(raw json.RawMessage) (json.RawMessage, bool) {
	if k.d.Label {
		raw = k.r.guard.Label(raw, k.b.Name(), k.name)
	}
	return raw, true
}

// CapResult cuts the result to max_result_bytes.
func (k *ToolCall) CapResult(raw json.RawMessage) (json.RawMessage, bool) {
	if capped, cut := k.r.guard.Cap(raw, k.d); cut {
		raw = capped
		k.rec.Outcome = "ok, cut to max_result_bytes"
	}
	return raw, true
}

// SealState seals a modern server's requestState for a modern client
// (bridge.Seal), bound to this call.
func (k *ToolCall) SealState(raw json.RawMessage) (json.RawMessage, bool) {
	raw, err := k.r.bridge.Seal(raw, k.re, k.bind, k.ttl)
	if err != nil {
		k.rec.Outcome = "error"
		k.end(nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()})
		return nil, false
	}
	return raw, true
}
