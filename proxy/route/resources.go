package route

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"github.com/manifold-mcp/manifold/proxy/relay"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manifold-mcp/manifold/policy"
	"github.com/manifold-mcp/manifold/proxy/era"
	"github.com/manifold-mcp/manifold/proxy/naming"
	"github.com/manifold-mcp/manifold/proxy/observe"
	"github.com/manifold-mcp/manifold/proxy/session"
)

// Resources, prompts and completion are routed here as a tools/call is by
// the pipeline: by the catalog in force, decided by the policy for the
// caller, audited, and sent to the server that owns the name or URI.

// ReadResource answers a resources/read of the URI the client knows: the
// server that owns it, the policy, and the contents as the client knows them.
func (s *Route) ReadResource(ctx context.Context, ss *mcp.ServerSession, p *mcp.ReadResourceParams) (res *mcp.ReadResourceResult, err error) {
	start := time.Now()
	rec := observe.Record{Method: "resources/read", Exposed: p.URI, Decision: "denied", Outcome: "not found", Identity: session.IdentityFrom(ctx).Subject}
	if s.obs.Records() {
		defer func() {
			if err != nil && rec.Outcome == "" {
				rec.Outcome, rec.Error = "error", err.Error()
			} else if rec.Outcome == "" {
				rec.Outcome = "ok"
				for _, c := range res.Contents {
					if c != nil {
						rec.ResultBytes += len(c.Text) + len(c.Blob)
					}
				}
			}
			rec.Catalog = s.host.Mode(ctx, ss, false)
			RecordSession(&rec, ss)
			s.obs.Record(rec, start, nil)
		}()
	}
	s.host.WaitReady(ctx)
	c := s.host.Catalog().View()
	server, original, uri, ok, err := c.ResolveResource(p.URI)
	if err != nil {
		rec.Outcome = "refused: no canonical URI"
		return nil, err
	}
	if !ok {
		return nil, mcp.ResourceNotFoundError(p.URI)
	}
	who := session.IdentityFrom(ctx).Policy()
	d := c.ResourceAllowed(server, original, uri, who)
	rec.Exposed, rec.Server, rec.Original = uri, server, original
	if rec.Decision, rec.Rule = observe.DecisionWords(d); !d.Visible {
		rec.Outcome = "denied"
		return nil, mcp.ResourceNotFoundError(p.URI) // a denied resource does not exist for the caller
	}
	rec.Outcome = ""
	cs, b, err := s.host.UpFor(ctx, server)
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
	}
	if iso, err := s.host.SessionUpstream(ctx, b, ss); err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
	} else if iso != nil {
		cs = iso.Session()
	}
	ctx, cancel := context.WithTimeout(ctx, b.CallTimeout())
	defer cancel()
	defer b.Enter(ctx, ss)() // what the server asks meanwhile may be this read's (relay.go)
	fwd := *p
	fwd.URI = original
	ctx, fwd.Meta = s.obs.TraceMeta(ctx, fwd.Meta)
	res, err = cs.ReadResource(ctx, &fwd)
	if err != nil {
		return nil, relay.RPCError(server, err)
	}
	if res.CacheScope == "" {
		// An upstream that sent no cacheScope means the protocol's
		// default; the field is required on the wire, so say it rather
		// than send it empty (as the SDK does for the results it builds).
		res.CacheScope = "public"
	}
	// An entry may name another resource (a folder read listing its
	// files): each is decided like a read of its own URI.
	kept := res.Contents[:0]
	labelled := false // a text was labelled as data (the first gets the preamble)
	for _, rc := range res.Contents {
		if rc == nil {
			continue
		}
		out, ok := c.UpstreamResource(server, rc.URI, who)
		if !ok {
			continue
		}
		if d.Label && rc.Text != "" && !strings.HasPrefix(rc.URI, "ui://") {
			// ui:// is an app's HTML, which the host renders and the model does not read.
			rc.Text = s.guard.LabelText(rc.Text, server, "uri", out, !labelled)
			labelled = true
		}
		rc.URI = out
		kept = append(kept, rc)
	}
	if len(kept) == 0 && len(res.Contents) > 0 {
		rec.Outcome = "denied"
		return nil, mcp.ResourceNotFoundError(p.URI)
	}
	if len(kept) < len(res.Contents) || c.Rules.GuardsResources(server) {
		// What this read shows depends on the policy, as a narrowed list
		// does: no shared cache may serve it to another client. (A client
		// of the initialize era gets no cache fields: legacyCacheMiddleware.)
		res.CacheScope = era.ScopePrivate
	}
	res.Contents = kept
	return res, nil
}

// codeRateLimited is the JSON-RPC error code of a prompts/get refused by a
// rate limit (a tools/call gets an isError result instead): an
// implementation-defined server error.
const codeRateLimited = -32000

// GetPrompt answers a prompts/get of an exposed prompt name.
func (s *Route) GetPrompt(ctx context.Context, req *mcp.GetPromptRequest) (res *mcp.GetPromptResult, err error) {
	start := time.Now()
	id := session.RequestIdentity(ctx, req)
	who := id.Policy()
	rec := observe.Record{Method: "prompts/get", Exposed: req.Params.Name, Decision: "allowed", Identity: id.Subject}
	if s.obs.Records() {
		defer func() {
			if err != nil {
				rec.Outcome, rec.Error = cmp.Or(rec.Outcome, "error"), err.Error()
			} else {
				rec.Outcome = "ok"
				if b, merr := json.Marshal(res); merr == nil {
					rec.ResultBytes = len(b)
				}
			}
			rec.Catalog = s.host.Mode(ctx, req.Session, false)
			RecordSession(&rec, req.Session)
			s.obs.Record(rec, start, nil)
		}()
	}
	c := s.host.Catalog().View()
	e, d, ok := c.VisiblePrompt(req.Params.Name, who)
	if !ok {
		rec.Decision = "denied"
		if msg, held := c.HeldMessage("prompt", req.Params.Name); held {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: msg}
		}
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown prompt %q", req.Params.Name)}
	}
	rec.Server, rec.Original = e.Server, e.Original
	rec.Decision, rec.Rule = observe.DecisionWords(d)
	if r := d.Limits.Rate; !r.IsZero() {
		// Buckets are per exposed item; a prompt's never shares a tool's.
		wait, err := s.guard.TakeRate(ctx, "prompt\x00"+req.Params.Name, d.Limits, id.Key)
		if err != nil {
			rec.Outcome = "rate limit unchecked"
			return nil, &jsonrpc.Error{Code: codeRateLimited, Message: fmt.Sprintf(
				"rate limit: prompt %s allows %s (%s), and the count shared by the replicas could not be checked (%v); nothing was sent upstream. Retry in a few seconds",
				req.Params.Name, r, d.Limits.RateSource, err)}
		}
		if wait > 0 {
			rec.Outcome = "rate limited"
			return nil, &jsonrpc.Error{Code: codeRateLimited, Message: fmt.Sprintf(
				"rate limit: prompt %s allows %s (%s); nothing was sent upstream. Retry in %s",
				req.Params.Name, r, d.Limits.RateSource, (wait + time.Millisecond).Round(time.Second/10))}
		}
	}
	cs, b, err := s.host.UpFor(ctx, e.Server)
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
	}
	if iso, err := s.host.SessionUpstream(ctx, b, req.Session); err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
	} else if iso != nil {
		cs = iso.Session()
	}
	timeout := b.CallTimeout()
	if t := d.Limits.CallTimeout; t > 0 && t < timeout {
		timeout = t
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	defer b.Enter(ctx, req.Session)() // what the server asks meanwhile may be this request's (relay.go)
	fwd := *req.Params
	fwd.Name = e.Original
	ctx, fwd.Meta = s.obs.TraceMeta(ctx, fwd.Meta)
	res, err = cs.GetPrompt(ctx, &fwd)
	if err != nil {
		return nil, relay.RPCError(e.Server, err)
	}
	if c.FiltersResources(e.Server) {
		for _, m := range res.Messages {
			if m != nil {
				m.Content = filterContent(m.Content, func(u string) (string, bool) { return c.UpstreamResource(e.Server, u, who) })
			}
		}
	}
	return res, nil
}

// filterContent rewrites the URI of a resource link or embedded resource,
// or replaces the block by a note when filter says it must be withheld
// (naming.FilterContentResources is the same for raw results).
func filterContent(ct mcp.Content, filter func(string) (string, bool)) mcp.Content {
	var uri *string
	switch ct := ct.(type) {
	case *mcp.ResourceLink:
		uri = &ct.URI
	case *mcp.EmbeddedResource:
		if ct.Resource == nil {
			uri = new(string)
		} else {
			uri = &ct.Resource.URI
		}
	default:
		return ct
	}
	out, keep := filter(*uri)
	if !keep {
		return &mcp.TextContent{Text: naming.WithheldNote}
	}
	*uri = out
	return ct
}

// Complete routes completion/complete by its ref: a prompt by exposed
// name, a resource template by URI. An upstream without completions gives an
// empty answer, so one server never breaks completion for the others.
func (s *Route) Complete(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	s.host.WaitReady(ctx)
	c := s.host.Catalog().View()
	if req.Params == nil || req.Params.Ref == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "completion/complete needs a ref"}
	}
	fwd := *req.Params
	ref := *req.Params.Ref
	fwd.Ref = &ref
	var server string
	switch ref.Type {
	case "ref/prompt":
		e, _, ok := c.VisiblePrompt(ref.Name, session.RequestIdentity(ctx, req).Policy())
		if !ok {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown prompt %q", ref.Name)}
		}
		server, ref.Name = e.Server, e.Original
	case "ref/resource":
		srv, original, ok := c.URIs.Inward(ref.URI)
		if !ok {
			if owner, found := c.TmplOwner[ref.URI]; found {
				srv, original, ok = owner, ref.URI, true
			} else if owner, found := c.ResOwner[ref.URI]; found {
				srv, original, ok = owner, ref.URI, true
			}
		}
		if !ok || !c.Rules.Decide(policy.Item{Kind: policy.Template, Server: srv, Original: original, Exposed: ref.URI, Who: session.RequestIdentity(ctx, req).Policy()}).Visible {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown resource template %q", ref.URI)}
		}
		server, ref.URI = srv, original
	default:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown ref type %q", ref.Type)}
	}
	cs, b, err := s.host.UpFor(ctx, server)
	if err != nil {
		return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{}}}, nil
	}
	if caps := b.Capabilities(); caps == nil || caps.Completions == nil {
		return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{}}}, nil
	}
	ctx, cancel := context.WithTimeout(ctx, b.CallTimeout())
	defer cancel()
	defer b.Enter(ctx, req.Session)() // what the server asks meanwhile may be this request's (relay.go)
	res, err := cs.Complete(ctx, &fwd)
	if err != nil {
		return nil, relay.RPCError(server, err)
	}
	return res, nil
}
