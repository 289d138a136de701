//lint:file-ignore SA1019 sampling and roots are deprecated as of protocol 2026-07-28, but the proxy bridges them between clients and servers of both eras (ARCHITECTURE §3 "Protocol versions").

package bridge

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manifold-mcp/manifold/proxy/era"
	"github.com/manifold-mcp/manifold/proxy/relay"
)

// Defaults of the bridge.
const (
	defaultMaxParked = 1024 // calls parked at once, all clients together
	gatherWindow     = 5 * time.Millisecond
)

// Options are what the bridge takes from the root.
type Options struct {
	// StateKey keys the sealed requestState values (the root's
	// Options.StateKey); if empty, a random key of this process.
	StateKey []byte
	// MaxParked bounds the calls parked at once; if zero, 1024.
	MaxParked int
	// Retries carries a retry to the replica that holds its call, and
	// names this replica (the root's Options.Retries); nil when replicas
	// do not forward retries.
	Retries RetryRelay
	// ErrNoReplica and ErrUnreachable are the errors by which Retries says
	// that no replica of that name listens, and that the shared store that
	// carries retries cannot be reached (the root's ErrNoReplica and
	// ErrSharedUnavailable).
	ErrNoReplica, ErrUnreachable error
	// MaxInputRounds bounds the rounds of input a legacy client gives a
	// modern server in one call; if zero, 10.
	MaxInputRounds int
	// Principal names who asks a request of ctx on ss, by a client that
	// names itself client (the root's session.Principal): a retry must be
	// asked by the principal its state is bound to.
	Principal func(ctx context.Context, ss *mcp.ServerSession, client string) string
	// Relay is the relay (proxy/relay) by whose rules a bridged call's
	// questions reach the client, and its progress the retry that waits.
	Relay Relay
	// Methods names the server->client requests in the keys of input
	// requests (relay.Methods).
	Methods map[string]string
	// Digest is the digest of a call a person is asked to approve
	// (confirm.Digest): a retry of a parked call awaiting approval must
	// carry the same.
	Digest func(principal, tool string, args json.RawMessage) (string, error)
}

// Relay is what the bridge asks of the relay (proxy/relay's *Relay): the
// progress of a parked call sent to the retry that resumed it, here or on
// the replica that forwarded it, and the session a URL-mode elicitation
// went to, for its completion.
type Relay interface {
	Rebind(route string, ctx context.Context, ss *mcp.ServerSession, meta json.RawMessage)
	RebindRemote(route string, send func(*mcp.ProgressNotificationParams))
	RememberElicitation(id string, b relay.Backend, ss *mcp.ServerSession)
}

// New returns the bridges of a proxy.
func New(opts Options) *Bridges {
	return &Bridges{opts: opts, max: opts.MaxParked}
}

// missingCap is the -32021 error for a request that needs a capability the
// client did not declare.
func missingCap(method, server string, need *mcp.ClientCapabilities, capName string) error {
	data, _ := json.Marshal(mcp.MissingRequiredClientCapabilityData{RequiredCapabilities: need})
	return &jsonrpc.Error{Code: mcp.CodeMissingRequiredClientCapabilities, Data: data, Message: fmt.Sprintf(
		"%s from %q needs the client capability %q, which this client did not declare; declare it (in _meta %s, or at initialize) to use this tool",
		method, server, capName, mcp.MetaKeyClientCapabilities)}
}

// NeedCap returns the capability method needs from caps, or an error naming
// it when caps lack it. mode is an elicitation's mode ("form", "url").
func NeedCap(method, server, mode string, caps *mcp.ClientCapabilities) error {
	switch method {
	case "sampling/createMessage":
		if caps.Sampling == nil {
			return missingCap(method, server, &mcp.ClientCapabilities{Sampling: &mcp.SamplingCapabilities{}}, "sampling")
		}
	case "elicitation/create":
		e := caps.Elicitation
		switch {
		case e == nil:
			return missingCap(method, server, &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{}}, "elicitation")
		case mode == "url" && e.URL == nil:
			return missingCap(method, server, &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}}, "elicitation.url")
		}
	case "roots/list":
		if caps.RootsV2 == nil {
			return missingCap(method, server, &mcp.ClientCapabilities{RootsV2: &mcp.RootCapabilities{}}, "roots")
		}
	}
	return nil
}

// StateError is the -32602 answer to a retry whose requestState is refused.
func StateError(name string, err error) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf(
		"invalid requestState for tool %q: %v; call the tool again without requestState and inputResponses to start over", name, err)}
}

// bridges holds the proxy's sealed-state key and the calls parked on legacy
// servers while their clients answer.
type Bridges struct {
	opts Options

	once   sync.Once
	sealer *era.Sealer
	err    error

	mu     sync.Mutex
	parked map[string]*Call // by id; guarded by mu
	max    int              // bound of parked; if zero, defaultMaxParked
}

// Sealer returns the state sealer, keyed by Options.StateKey or, if that is
// empty, by a random key of this process.
func (br *Bridges) Sealer() (*era.Sealer, error) {
	br.once.Do(func() {
		key := br.opts.StateKey
		if len(key) == 0 {
			key = era.NewKey()
		}
		br.sealer, br.err = era.NewSealer(key)
	})
	return br.sealer, br.err
}

func (br *Bridges) add(pc *Call) bool {
	br.mu.Lock()
	defer br.mu.Unlock()
	limit := br.max
	if limit == 0 {
		limit = defaultMaxParked
	}
	if len(br.parked) >= limit {
		return false
	}
	if br.parked == nil {
		br.parked = make(map[string]*Call)
	}
	br.parked[pc.id] = pc
	return true
}

func (br *Bridges) Get(id string) *Call {
	br.mu.Lock()
	defer br.mu.Unlock()
	return br.parked[id]
}

func (br *Bridges) remove(pc *Call) {
	br.mu.Lock()
	defer br.mu.Unlock()
	if br.parked[pc.id] == pc {
		delete(br.parked, pc.id)
	}
}

func (br *Bridges) Count() int {
	br.mu.Lock()
	defer br.mu.Unlock()
	return len(br.parked)
}

// Call is one tools/call of a modern client on a legacy server that
// may span several downstream requests: the first, and one retry per round
// of input. The upstream call runs on ctx, which the downstream request
// being served (attached) cancels, and which is otherwise bounded by the
// call's own timeout and, between rounds, by the state TTL.
type Call struct {
	br      *Bridges
	sealer  *era.Sealer
	id      string
	bind    era.Binding
	server  string
	replica string // this replica's name, when replicas forward retries (retries.go)
	ttl     time.Duration
	cancel  context.CancelFunc // cancels the upstream call

	mu       sync.Mutex
	caps     *mcp.ClientCapabilities // of the request being served; guarded by mu
	attached func(json.RawMessage, error)
	detach   func() bool     // stops the attached request's cancellation; guarded by mu
	asks     map[string]*ask // unanswered upstream requests, by key; guarded by mu
	seq      int             // keys handed out; guarded by mu
	round    int             // input_required results sent; guarded by mu
	outcome  *callOutcome    // the upstream call's end, once it came while parked; guarded by mu
	expiry   *time.Timer     // the state TTL while parked; guarded by mu
	gather   *time.Timer     // pending flush; guarded by mu
	parked   bool            // registered in br; guarded by mu
	done     bool            // the call has ended for the client; guarded by mu
	progress string          // the call's progress route (progressRoutes), if it has one; guarded by mu
	confirm  string          // the digest of the call awaiting a person's approval (confirm.go); guarded by mu
	aborted  string          // why abort ended the call; guarded by mu
}

// SetProgressRoute records the call's progress route, which each retry
// rebinds to itself (resumeCall).
func (pc *Call) SetProgressRoute(id string) {
	pc.mu.Lock()
	pc.progress = id
	pc.mu.Unlock()
}

type ask struct {
	method string
	params json.RawMessage
	answer chan json.RawMessage // buffered 1
}

type callOutcome struct {
	raw json.RawMessage
	err error
}

type parkedKey struct{}

// Of returns the parked call ctx belongs to, if any.
func Of(ctx context.Context) *Call {
	if ctx == nil {
		return nil
	}
	pc, _ := ctx.Value(parkedKey{}).(*Call)
	return pc
}

// Park prepares the bridge of a modern client's call on a legacy
// server: it returns the context to run the upstream call on (carrying the
// values of ctx, cancelled by ctx while ctx's request is attached) and the
// call, attached to ctx and finish.
func (br *Bridges) Park(ctx context.Context, bind era.Binding, caps *mcp.ClientCapabilities, ttl time.Duration, finish func(json.RawMessage, error)) (context.Context, *Call, error) {
	sealer, err := br.Sealer()
	if err != nil {
		return nil, nil, err
	}
	cctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	pc := &Call{
		br: br, sealer: sealer, id: "pc-" + rand.Text(),
		bind: bind, server: bind.Upstream, ttl: ttl, cancel: cancel, caps: caps,
	}
	if br.opts.Retries != nil {
		pc.replica = br.opts.Retries.Replica()
	}
	pc.attached = finish
	pc.detach = context.AfterFunc(ctx, cancel)
	return context.WithValue(cctx, parkedKey{}, pc), pc, nil
}

// ask is an upstream's server->client request during the call: it becomes an
// input request of the call's next input_required result, and ask waits for
// the client's answer (or for ctx, the upstream's request, to end).
func (pc *Call) Ask(ctx context.Context, method, mode string, params any) (json.RawMessage, error) {
	raw, err := json.Marshal(params)
	if err != nil {
		return nil, fmt.Errorf("%s from %q: encoding params: %w", method, pc.server, err)
	}
	pc.mu.Lock()
	if err := NeedCap(method, pc.server, mode, pc.caps); err != nil {
		pc.mu.Unlock()
		return nil, err
	}
	if pc.done {
		pc.mu.Unlock()
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("%s from %q: the client's call has ended", method, pc.server)}
	}
	if !pc.parked {
		if !pc.br.add(pc) {
			pc.mu.Unlock()
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf(
				"%s from %q refused: too many calls are waiting for their clients' input; retry later", method, pc.server)}
		}
		pc.parked = true
	}
	pc.seq++
	key := fmt.Sprintf("%s-%d", pc.br.opts.Methods[method], pc.seq)
	a := &ask{method: method, params: raw, answer: make(chan json.RawMessage, 1)}
	if pc.asks == nil {
		pc.asks = make(map[string]*ask)
	}
	pc.asks[key] = a
	if pc.attached != nil && pc.gather == nil {
		// Requests sent together become one round: wait a moment for the
		// others before answering the client.
		pc.gather = time.AfterFunc(gatherWindow, pc.flush)
	}
	pc.mu.Unlock()

	select {
	case ans := <-a.answer:
		return ans, nil
	case <-ctx.Done():
		pc.mu.Lock()
		delete(pc.asks, key)
		pc.mu.Unlock()
		return nil, ctx.Err()
	}
}

// flush answers the attached request with an input_required result holding
// every unanswered input request, and parks the call until the retry.
func (pc *Call) flush() {
	pc.mu.Lock()
	pc.gather = nil
	if pc.attached == nil || len(pc.asks) == 0 || pc.done {
		pc.mu.Unlock()
		return
	}
	finish := pc.attached
	raw, err := pc.inputRequiredLocked()
	if err != nil {
		pc.mu.Unlock()
		finish(nil, err)
		return
	}
	pc.attached = nil
	pc.detach()
	pc.expiry = time.AfterFunc(pc.ttl, pc.Expire)
	pc.mu.Unlock()
	finish(raw, nil)
}

// inputRequiredLocked builds the input_required result of the next round.
func (pc *Call) inputRequiredLocked() (json.RawMessage, error) {
	pc.round++
	state, err := pc.sealer.Seal(era.State{Kind: era.Parked, Binding: pc.bind, Expires: time.Now().Add(pc.ttl), Call: pc.id, Round: pc.round, Replica: pc.replica})
	if err != nil {
		return nil, err
	}
	type inputRequest struct {
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	reqs := make(map[string]inputRequest, len(pc.asks))
	for _, k := range slices.Sorted(maps.Keys(pc.asks)) {
		reqs[k] = inputRequest{pc.asks[k].method, pc.asks[k].params}
	}
	return json.Marshal(struct {
		ResultType    string                  `json:"resultType"`
		InputRequests map[string]inputRequest `json:"inputRequests"`
		RequestState  string                  `json:"requestState"`
	}{"input_required", reqs, state})
}

// finish is the upstream call's end (startCall's finish for a bridged call):
// it goes to the attached request, or waits for the retry while parked.
func (pc *Call) Finish(raw json.RawMessage, err error) {
	pc.mu.Lock()
	if pc.done {
		pc.mu.Unlock()
		return
	}
	if pc.attached == nil {
		pc.outcome = &callOutcome{raw, err}
		pc.mu.Unlock()
		return
	}
	finish := pc.attached
	pc.endLocked()
	pc.mu.Unlock()
	finish(raw, err)
}

// endLocked ends the call for the client: nothing is delivered after it.
func (pc *Call) endLocked() {
	pc.done = true
	pc.attached = nil
	if pc.detach != nil {
		pc.detach()
	}
	if pc.expiry != nil {
		pc.expiry.Stop()
	}
	if pc.gather != nil {
		pc.gather.Stop()
	}
	if pc.parked {
		pc.br.remove(pc)
	}
}

// expire frees a call whose state was not used within its TTL: the upstream
// call is cancelled.
func (pc *Call) Expire() {
	pc.mu.Lock()
	if pc.attached != nil || pc.done {
		pc.mu.Unlock()
		return
	}
	pc.endLocked()
	pc.mu.Unlock()
	pc.cancel()
}

// rounds returns how many input_required results the call has sent.
func (pc *Call) Rounds() int {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	return pc.round
}

// resume serves a retry of the parked call: st is its opened state, ctx and
// finish the retry's request. The answers go to the waiting upstream
// requests; the retry is answered by the next event.
//
// rebind is called with the call's progress route once the state is found
// good, before the answers go to the server.
func (pc *Call) Resume(ctx context.Context, st era.State, caps *mcp.ClientCapabilities, responses map[string]json.RawMessage, finish func(json.RawMessage, error), rebind func(route string)) error {
	pc.mu.Lock()
	if pc.done || pc.attached != nil || st.Round != pc.round {
		pc.mu.Unlock()
		return errors.New("it was already used (a requestState is valid for one retry); use the requestState of the latest result")
	}
	rebind(pc.progress)
	if pc.expiry != nil {
		pc.expiry.Stop()
	}
	pc.caps = caps
	for k, v := range responses {
		if a, ok := pc.asks[k]; ok {
			a.answer <- v
			delete(pc.asks, k)
		}
	}
	if o := pc.outcome; o != nil {
		pc.endLocked()
		pc.mu.Unlock()
		finish(o.raw, o.err)
		return nil
	}
	pc.attached = finish
	pc.detach = context.AfterFunc(ctx, pc.cancel)
	if len(pc.asks) > 0 && pc.gather == nil { // asked again: still unanswered
		pc.gather = time.AfterFunc(gatherWindow, pc.flush)
	}
	pc.mu.Unlock()
	return nil
}

// NoInputKey marks the context of a modern client's call on a legacy server
// whose request declared none of sampling, elicitation and roots; its value
// is the server's name. Such a call is not parked (newParked): whatever the
// server asks is refused at once, as NeedCap refuses it in a parked call.
type NoInputKey struct{}

// MayAsk reports whether a modern client's request declared a capability a
// server's question could need (NeedCap): sampling, elicitation or roots.
func MayAsk(caps *mcp.ClientCapabilities) bool {
	return caps != nil && (caps.Sampling != nil || caps.Elicitation != nil || caps.RootsV2 != nil)
}

// Ask hands an upstream's request to the parked call ctx belongs to,
// decoding the client's answer as T. ok is false when ctx belongs to no
// modern client's call (the request is relayed as before).
func Ask[T any](ctx context.Context, method, mode string, params any) (res T, ok bool, err error) {
	pc := Of(ctx)
	if pc == nil {
		if server, marked := ctx.Value(NoInputKey{}).(string); marked {
			if err = NeedCap(method, server, mode, &mcp.ClientCapabilities{}); err == nil {
				err = &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: fmt.Sprintf("%s from %q refused: the client's call cannot be asked anything", method, server)}
			}
			return res, true, err
		}
		return res, false, nil
	}
	raw, err := pc.Ask(ctx, method, mode, params)
	if err != nil {
		return res, true, err
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		return res, true, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf(
			"the client's answer to %s from %q could not be decoded: %v", method, pc.server, err)}
	}
	return res, true, nil
}

// Server returns the name of the server the call is parked on.
func (pc *Call) Server() string { return pc.server }

// OpenRetry opens the requestState of a retry in fields, bound to the
// request's name, server and principal; its error is the -32602 answer.
func (br *Bridges) OpenRetry(name, server, principal string, fields map[string]json.RawMessage) (era.State, error) {
	var token string
	if err := json.Unmarshal(fields["requestState"], &token); err != nil {
		return era.State{}, StateError(name, errors.New("it is not a string"))
	}
	sealer, err := br.Sealer()
	if err != nil {
		return era.State{}, err
	}
	st, err := sealer.Open(token, era.Binding{Method: "tools/call", Name: name, Upstream: server, Principal: principal}, time.Now())
	if err != nil {
		return era.State{}, StateError(name, err)
	}
	return st, nil
}

// ResumeParked hands a retry's answers to pc, the parked call its state st
// names (nil: none is waiting here), and attaches the retry (ctx, finish)
// to the call's next event.
func (br *Bridges) ResumeParked(ctx context.Context, pc *Call, st era.State, caps *mcp.ClientCapabilities, principal, name string, fields map[string]json.RawMessage, finish func(json.RawMessage, error), rebind func(route string)) {
	if pc == nil {
		finish(nil, StateError(name, errors.New("the call it names is no longer waiting for input (it ended, timed out, or its state was already used)")))
		return
	}
	if err := br.checkConfirmRetry(pc, principal, name, fields); err != nil {
		finish(nil, StateError(name, err))
		return
	}
	var responses map[string]json.RawMessage
	if raw := fields["inputResponses"]; len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &responses); err != nil {
			finish(nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("invalid inputResponses for tool %q: %v", name, err)})
			return
		}
	}
	if err := pc.Resume(ctx, st, caps, responses, finish, rebind); err != nil {
		finish(nil, StateError(name, err))
	}
}
