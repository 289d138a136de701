package confirm

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manifold-mcp/manifold/internal/redact"
	"github.com/manifold-mcp/manifold/policy"
	"github.com/manifold-mcp/manifold/proxy/internal/wire"
)

// This file holds approval bound to the call (README "Approval bound to
// the call"): a tool whose decision says Confirm runs only after a person
// approved that exact call. The call path calls Approver.Confirm after the
// policy, the route and the rate limit, and before anything is sent
// upstream.
//
// How the person is asked, one code path for both eras (askPerson):
//
//   - a client that declared elicitation gets an elicitation: a form with
//     the server, the tool, the reason and the exact arguments, and a
//     boolean to approve. Through the parked call of a modern (2026-07-28)
//     request it becomes an input_required result (the same path as an
//     upstream's elicitation: Options.Parked); on a legacy session it is a real
//     elicitation/create request. Where the client declared elicitation.url
//     and the proxy serves HTTP (Approver.ServePages), a URL-mode
//     elicitation points to a one-time page of the proxy instead, which the
//     model cannot answer (confirmpage.go);
//   - a client that cannot elicit gets an isError result with an approval
//     id; the person runs `manifold approve-call ID`, which leaves a file
//     in Options.Dir, and the same call with the same arguments
//     then runs once.
//
// Each approval is bound to a digest of the principal (session or client),
// the exposed tool and the canonical arguments (approvalDigest), is used
// once, expires after Options.TTL, and is audited with its answer
// (confirm = accepted | declined | expired | timeout | unavailable) and id.
// What is forwarded is the canonical form of the arguments that the person
// saw, so that a frame with duplicate keys cannot show one value and run
// another.

// defaultConfirmTTL is Options.TTL's default.
const defaultConfirmTTL = 5 * time.Minute

// maxPendingApprovals bounds the approvals waiting for the command line.
const maxPendingApprovals = 1000

// Audit values of the confirm field.
const (
	confirmAccepted    = "accepted"
	confirmDeclined    = "declined"
	confirmExpired     = "expired"
	confirmTimeout     = "timeout"
	confirmUnavailable = "unavailable"
)

// approvalIDRE is the shape of an approval id ("ap-" and rand.Text's
// base32); approve-call checks it before it touches a file.
var approvalIDRE = regexp.MustCompile(`^ap-[A-Z2-7]{26}$`)

// ValidApprovalID reports whether id has the shape of an approval id.
func ValidApprovalID(id string) bool { return approvalIDRE.MatchString(id) }

func newApprovalID() string { return "ap-" + rand.Text() }

// Approver asks a person to approve the calls whose decision says Confirm
// (Confirm), keeps the approvals that wait for `manifold approve-call`, and
// serves the pages of URL-mode approvals (ServePages). It is safe for
// concurrent use.
type Approver struct {
	opts      Options
	log       *slog.Logger
	approvals approvals                    // approvals waiting for approve-call
	pages     atomic.Pointer[confirmPages] // URL-mode approval pages, when serving HTTP (page.go)
}

// Options configure an Approver.
type Options struct {
	// TTL is how long a person has to answer a request to approve a call,
	// and how long an approval id waits for `manifold approve-call` and the
	// retry. If zero, 5 minutes.
	TTL time.Duration
	// Dir is the folder, private to the user, through which `manifold
	// approve-call` approves the calls of clients that cannot elicit. If
	// empty, such calls are refused with no way to approve them.
	Dir string
	// Store shares the approvals given with `manifold approve-call` between
	// replicas; Dir is then not used. If nil, approvals go through Dir, for
	// this process only.
	Store Store
	// Redactor hides secrets in the arguments a person is shown. If nil,
	// credential shapes only.
	Redactor *redact.Redactor
	// Logger receives what goes wrong with the approval folder. If nil,
	// nothing is logged.
	Logger *slog.Logger
	// Parked reaches the parked call of a modern client's call (the
	// bridge's), through which the person is asked. If zero, no call is
	// parked: a person is asked on the client's session.
	Parked Parked
}

// Parked is what an Approver needs of the parked calls of modern
// (2026-07-28) clients: each func finds the parked call that ctx belongs
// to, if any.
type Parked struct {
	// Ask asks the client elicitation/create (in mode) through the parked
	// call, and reports false when ctx belongs to none.
	Ask func(ctx context.Context, mode string, p *mcp.ElicitParams) (res *mcp.ElicitResult, parked bool, err error)
	// Bind binds the parked call, if any, to the digest of the call the
	// person is asked to approve: a retry with other arguments is refused.
	Bind func(ctx context.Context, digest string)
	// Aborted returns why the parked call was aborted; "" if it was not or
	// there is none.
	Aborted func(ctx context.Context) string
}

// New returns an Approver.
func New(opts Options) *Approver {
	ar := &Approver{opts: opts, log: opts.Logger}
	if ar.log == nil {
		ar.log = slog.New(slog.DiscardHandler)
	}
	return ar
}

// TTL is how long a person has to answer, and an approval waits
// (Options.TTL).
func (ar *Approver) TTL() time.Duration {
	if ar.opts.TTL > 0 {
		return ar.opts.TTL
	}
	return defaultConfirmTTL
}

// Digest returns the digest that binds an approval to who calls
// (principal), which tool (the exposed name) and its arguments, in their
// canonical form; an error when the arguments are not one JSON object.
func Digest(principal, exposed string, args json.RawMessage) (string, error) {
	canonical, err := canonicalArgs(args)
	if err != nil {
		return "", err
	}
	return approvalDigest(principal, exposed, canonical), nil
}

// canonicalArgs returns the canonical JSON of a call's arguments: the
// object decoded (numbers kept as written) and encoded again, keys sorted,
// no insignificant whitespace. Absent or null arguments are {}. Anything
// but one JSON object is an error.
func canonicalArgs(raw json.RawMessage) (json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return json.RawMessage("{}"), nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v map[string]any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("the arguments are not a JSON object: %w", err)
	}
	if dec.More() {
		return nil, errors.New("the arguments hold more than one JSON value")
	}
	if v == nil {
		return json.RawMessage("{}"), nil
	}
	return json.Marshal(v)
}

// approvalDigest binds an approval to who calls (principal), which tool
// (the exposed name) and the canonical arguments.
func approvalDigest(principal, exposed string, canonical []byte) string {
	h := sha256.New()
	for _, part := range [][]byte{[]byte(principal), []byte(exposed), canonical} {
		fmt.Fprintf(h, "%d:", len(part))
		h.Write(part)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// callView is what the person is shown of a call: Args is the pretty JSON
// of the arguments with the config's secrets and credential-like values
// masked.
type callView struct {
	ID       string    `json:"id"`
	Server   string    `json:"server"`
	Tool     string    `json:"tool"`
	Original string    `json:"original"`
	Reason   string    `json:"reason,omitempty"`
	Rule     string    `json:"rule"`
	Args     string    `json:"arguments"`
	Expires  time.Time `json:"expires"`
	PID      int       `json:"pid"`
}

// view builds the callView of a call of the exposed tool with the
// canonical arguments.
func (ar *Approver) view(id, server, exposed, original string, d policy.Decision, canonical []byte, expires time.Time) callView {
	var m map[string]any
	_ = json.Unmarshal(canonical, &m)
	pretty, err := json.MarshalIndent(redact.Args(m), "", "  ")
	if err != nil || m == nil {
		pretty = []byte("{}")
	}
	rule := d.ConfirmRule
	if d.ConfirmSource != "" {
		rule += " at " + d.ConfirmSource
	}
	return callView{ID: id, Server: server, Tool: exposed, Original: original, Reason: d.ConfirmReason, Rule: rule,
		Args: ar.opts.Redactor.String(string(pretty)), Expires: expires.UTC().Truncate(time.Second), PID: os.Getpid()}
}

// Text renders v for a person, as the elicitation's message, the page and
// approve-call show it.
func (v callView) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Approve this tool call before it runs?\n\nServer: %s\nTool: %s (%q on the server)\n", v.Server, v.Tool, v.Original)
	if v.Reason != "" {
		fmt.Fprintf(&b, "Why approval is needed: %s\n", v.Reason)
	}
	fmt.Fprintf(&b, "Asked by: %s\nArguments:\n%s\n\nApproval %s: for this call with exactly these arguments, once, until %s.",
		v.Rule, v.Args, v.ID, v.Expires.Format(time.RFC3339))
	return b.String()
}

// approvalSchema is the form of a form-mode approval: one boolean.
var approvalSchema = json.RawMessage(`{"type":"object","properties":{"approve":{"type":"boolean","title":"Run this call","description":"true runs the call shown, once; false or no answer runs nothing"}},"required":["approve"]}`)

// approvals are the approvals waiting for `manifold approve-call`, each
// for one call digest.
type approvals struct {
	mu      sync.Mutex
	pending map[string]*approval // by digest; guarded by mu
}

type approval struct {
	id      string
	expires time.Time
}

// Call is one call whose decision says Confirm.
type Call struct {
	Session   *mcp.ServerSession      // the client's session of the initialize era, if any: asked with elicitation/create
	Caps      *mcp.ClientCapabilities // the client's, for this request: how the person can be asked
	Principal string                  // who calls (a session, a client): the approval is bound to it
	Server    string                  // the upstream
	Exposed   string                  // the tool's exposed name
	Original  string                  // the tool's name on the server
	Decision  policy.Decision
}

// Answer is how Confirm settled a call: what its audit record says of the
// approval and, for a call that may not go on, its answer.
type Answer struct {
	Confirm  string          // accepted, declined, expired, timeout, unavailable; "" when no approval was asked
	Approval string          // the approval's id, if there is one
	Outcome  string          // the audit outcome of a call that may not go on
	Result   json.RawMessage // the isError result that answers a call that may not go on, or
	Err      error           // the error that does
}

// end records the answer of a call that may not go on.
func (rec *Answer) end(raw json.RawMessage, err error) { rec.Result, rec.Err = raw, err }

// Confirm settles the approval of call c, before anything is sent: it
// reports true when the call may go on, with fields["arguments"] set to the
// canonical arguments that were approved, and otherwise the Answer that
// ends the call. ctx is the call's own context (a modern client's parked
// call's, which carries it).
func (ar *Approver) Confirm(ctx context.Context, c Call, fields map[string]json.RawMessage) (bool, Answer) {
	var rec Answer
	done := rec.end
	server, exposed, original, d := c.Server, c.Exposed, c.Original, c.Decision
	canonical, err := canonicalArgs(fields["arguments"])
	if err != nil {
		rec.Outcome = "invalid arguments"
		done(wire.ToolError("%s; the call of %q needs a person's approval of its exact arguments, so nothing was executed. Call it again with the arguments as one JSON object", err, exposed), nil)
		return false, rec
	}
	ttl := ar.TTL()
	digest := approvalDigest(c.Principal, exposed, canonical)
	mode := ar.approvalMode(c.Caps)
	if mode == "" {
		if ar.opts.Store != nil {
			return ar.approveShared(ctx, server, exposed, original, d, digest, canonical, fields)
		}
		return ar.approveByCommand(server, exposed, original, d, digest, canonical, fields)
	}
	id := newApprovalID()
	rec.Approval = id
	v := ar.view(id, server, exposed, original, d, canonical, time.Now().Add(ttl))
	if bind := ar.opts.Parked.Bind; bind != nil {
		bind(ctx, digest)
	}
	actx, cancel := context.WithTimeout(ctx, ttl)
	defer cancel()
	ok, err := ar.askPerson(actx, c.Session, mode, v)
	switch {
	case err == nil && ok:
		rec.Confirm = confirmAccepted
		fields["arguments"] = canonical
		return true, rec
	case err == nil:
		rec.Confirm, rec.Outcome = confirmDeclined, "declined by the person"
		done(wire.ToolError("The person did not approve this call of %q (approval %s); nothing was executed. Do not retry it unless the person asks you to.", exposed, id), nil)
	case ctx.Err() != nil:
		if why := ar.aborted(ctx); why != "" {
			rec.Confirm, rec.Outcome = confirmDeclined, why
			done(nil, ctx.Err())
			return false, rec
		}
		rec.Confirm, rec.Outcome = confirmTimeout, "cancelled"
		done(nil, ctx.Err())
	case actx.Err() != nil:
		rec.Confirm, rec.Outcome = confirmTimeout, "approval timed out"
		done(wire.ToolError("No one approved this call of %q within %s (approval %s); nothing was executed. Call it again to ask the person again.", exposed, ttl, id), nil)
	default:
		rec.Confirm, rec.Outcome = confirmUnavailable, "approval not asked"
		done(wire.ToolError("This call of %q needs a person's approval, but asking for it failed: %v; nothing was executed.", exposed, err), nil)
	}
	return false, rec
}

// aborted returns why the parked call ctx belongs to was aborted, if it was
// (Options.Parked).
func (ar *Approver) aborted(ctx context.Context) string {
	if f := ar.opts.Parked.Aborted; f != nil {
		return f(ctx)
	}
	return ""
}

// approvalMode says how a client is asked: "url" where it declared
// elicitation.url and the proxy serves the approval page, "form" where it
// can elicit a form, and "" where it cannot elicit (approve-call).
func (ar *Approver) approvalMode(caps *mcp.ClientCapabilities) string {
	var e *mcp.ElicitationCapabilities
	if caps != nil {
		e = caps.Elicitation
	}
	switch {
	case e == nil:
		return ""
	case e.URL != nil && ar.pages.Load() != nil:
		return "url"
	case e.Form != nil || e.URL == nil: // an empty elicitation capability is form
		return "form"
	}
	return ""
}

// askPerson asks the person to approve the call shown by v, in mode, and
// reports their answer. It is the one place where the eras part: the
// request goes through the parked call of a modern client's request (an
// input_required result) and as elicitation/create on a legacy session.
func (ar *Approver) askPerson(ctx context.Context, ss *mcp.ServerSession, mode string, v callView) (bool, error) {
	p := &mcp.ElicitParams{Mode: "form", Message: "[manifold] " + v.Text(), RequestedSchema: approvalSchema}
	var page *confirmPage
	if mode == "url" {
		pages := ar.pages.Load()
		page = pages.open(v)
		defer pages.close(page)
		p = &mcp.ElicitParams{Mode: "url", Message: fmt.Sprintf("[manifold] Approve or deny a call of %s on %s: open the page, check the arguments and choose.", v.Tool, v.Server),
			URL: page.url, ElicitationID: page.elicitation}
	}
	var res *mcp.ElicitResult
	var parked bool
	var err error
	if ask := ar.opts.Parked.Ask; ask != nil {
		res, parked, err = ask(ctx, mode, p)
	}
	if !parked {
		if ss == nil {
			return false, errors.New("no client session to ask")
		}
		res, err = ss.Elicit(ctx, p)
	}
	if err != nil {
		return false, err
	}
	if res == nil || res.Action != "accept" {
		return false, nil
	}
	if page != nil {
		// The client opened the page; the answer is the person's click.
		ok, err := page.wait(ctx)
		if ss != nil && !parked {
			_ = ss.NotifyElicitationComplete(context.WithoutCancel(ctx), &mcp.ElicitationCompleteParams{ElicitationID: page.elicitation})
		}
		return ok, err
	}
	approve, _ := res.Content["approve"].(bool)
	return approve, nil
}

// approveByCommand serves a call of a client that cannot elicit: an
// approval given with `manifold approve-call` for this digest lets it
// through once; otherwise the call is refused with the id to approve.
func (ar *Approver) approveByCommand(server, exposed, original string, d policy.Decision, digest string,
	canonical []byte, fields map[string]json.RawMessage) (bool, Answer) {
	var rec Answer
	done := rec.end
	dir := ar.opts.Dir
	now := time.Now()
	ttl := ar.TTL()
	ap := &ar.approvals
	ap.mu.Lock()
	defer ap.mu.Unlock()
	expired := false
	for dg, a := range ap.pending {
		if now.After(a.expires) {
			expired = expired || dg == digest && approvedOnDisk(dir, a.id)
			removeApproval(dir, a.id)
			delete(ap.pending, dg)
		}
	}
	a := ap.pending[digest]
	if a != nil && approvedOnDisk(dir, a.id) {
		delete(ap.pending, digest)
		removeApproval(dir, a.id)
		rec.Confirm, rec.Approval = confirmAccepted, a.id
		fields["arguments"] = canonical
		return true, rec
	}
	if dir == "" {
		rec.Confirm, rec.Outcome = confirmUnavailable, "needs approval"
		done(wire.ToolError("This call of %q needs a person's approval, and this client cannot ask for it (it declared no elicitation), and this manifold takes no approval from the command line (it has no status folder); nothing was executed. Use a client that supports elicitation.", exposed), nil)
		return false, rec
	}
	if a == nil {
		if len(ap.pending) >= maxPendingApprovals {
			rec.Confirm, rec.Outcome = confirmUnavailable, "too many approvals waiting"
			done(wire.ToolError("This call of %q needs a person's approval, and %d approvals are already waiting; nothing was executed. Retry later.", exposed, len(ap.pending)), nil)
			return false, rec
		}
		a = &approval{id: newApprovalID(), expires: now.Add(ttl)}
		if err := writeApproval(dir, ar.view(a.id, server, exposed, original, d, canonical, a.expires)); err != nil {
			ar.log.Error("approval: cannot write the approval file for approve-call", "dir", dir, "err", err)
			rec.Confirm, rec.Outcome = confirmUnavailable, "needs approval"
			done(wire.ToolError("This call of %q needs a person's approval, which could not be prepared (%v); nothing was executed.", exposed, err), nil)
			return false, rec
		}
		if ap.pending == nil {
			ap.pending = make(map[string]*approval)
		}
		ap.pending[digest] = a
	}
	rec.Confirm, rec.Approval, rec.Outcome = confirmUnavailable, a.id, "needs approval"
	if expired {
		rec.Confirm = confirmExpired
	}
	done(wire.ToolError("This call of %q needs a person's approval before it runs, and this client cannot ask for it (it declared no elicitation); nothing was executed. "+
		"Approval id: %s. Ask the person to run, in a terminal on the machine where manifold runs:\n\n    manifold approve-call %s\n\n"+
		"It shows them the server, the tool and these exact arguments. Once they approved, call %s again with exactly the same arguments before %s: it will run once. "+
		"No tool can give this approval; only the person can.",
		exposed, a.id, a.id, exposed, a.expires.UTC().Format(time.RFC3339)), nil)
	return false, rec
}

// approveShared is approveByCommand with the approvals shared by replicas
// (Options.Store): the approval waits in the store, approve-call grants
// it there, and whichever replica the retry reaches redeems it, once. A
// store that cannot be reached refuses the call: an approval never fails
// open.
func (ar *Approver) approveShared(ctx context.Context, server, exposed, original string, d policy.Decision, digest string,
	canonical []byte, fields map[string]json.RawMessage) (bool, Answer) {
	var rec Answer
	done := rec.end
	st := ar.opts.Store
	unavailable := func(err error) (bool, Answer) {
		rec.Confirm, rec.Outcome = confirmUnavailable, "approvals unavailable"
		done(wire.ToolError("This call of %q needs a person's approval, and the approvals shared by the replicas could not be checked (%v); nothing was executed. Retry in a few seconds; if it persists, the operator should check the [cluster] Redis.", exposed, err), nil)
		return false, rec
	}
	id, ok, err := st.Redeem(ctx, digest)
	if err != nil {
		return unavailable(err)
	}
	if ok {
		rec.Confirm, rec.Approval = confirmAccepted, id
		fields["arguments"] = canonical
		return true, rec
	}
	id = newApprovalID()
	expires := time.Now().Add(ar.TTL())
	view, err := json.Marshal(ar.view(id, server, exposed, original, d, canonical, expires))
	if err != nil {
		return unavailable(err)
	}
	if id, expires, err = st.Offer(ctx, id, digest, view, expires); err != nil {
		return unavailable(err)
	}
	rec.Confirm, rec.Approval, rec.Outcome = confirmUnavailable, id, "needs approval"
	done(wire.ToolError("This call of %q needs a person's approval before it runs, and this client cannot ask for it (it declared no elicitation); nothing was executed. "+
		"Approval id: %s. Ask the person to run, where manifold runs (any replica, with the same config):\n\n    manifold approve-call %s\n\n"+
		"It shows them the server, the tool and these exact arguments. Once they approved, call %s again with exactly the same arguments before %s: it will run once. "+
		"No tool can give this approval; only the person can.",
		exposed, id, id, exposed, expires.UTC().Format(time.RFC3339)), nil)
	return false, rec
}

// The files of an approval in Options.Dir: ID.json, written by the
// proxy, shows the call to approve-call; ID.approved, written by
// approve-call, is the person's approval.

// ApprovalFile returns the path of the file that shows the call of
// approval id, in dir.
func ApprovalFile(dir, id string) string { return filepath.Join(dir, id+".json") }

// ApprovedFile returns the path of the file that approves approval id.
func ApprovedFile(dir, id string) string { return filepath.Join(dir, id+".approved") }

// View is what approve-call reads from an approval's file.
type View = callView

func writeApproval(dir string, v callView) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	tmp := ApprovalFile(dir, v.ID) + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, ApprovalFile(dir, v.ID))
}

// approvedOnDisk reports whether approve-call approved id: a regular file,
// not a link.
func approvedOnDisk(dir, id string) bool {
	if dir == "" {
		return false
	}
	fi, err := os.Lstat(ApprovedFile(dir, id))
	return err == nil && fi.Mode().IsRegular()
}

func removeApproval(dir, id string) {
	if dir == "" {
		return
	}
	_ = os.Remove(ApprovalFile(dir, id))
	_ = os.Remove(ApprovedFile(dir, id))
}

// Close removes the files of the approvals still waiting.
func (ar *Approver) Close() {
	ap := &ar.approvals
	ap.mu.Lock()
	defer ap.mu.Unlock()
	for dg, a := range ap.pending {
		removeApproval(ar.opts.Dir, a.id)
		delete(ap.pending, dg)
	}
}
