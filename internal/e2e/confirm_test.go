package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Approval bound to the call (README "Approval bound to the call"): a tool
// with confirm = true runs only after a person approved that exact call,
// through the built binary, with go-sdk clients of both eras over stdio and
// HTTP. The fixture's -calls file records every call that reached the
// server, so "none went through" is read from the server's side.

// confirmSetup is a config with two servers: bank (every tool needs
// approval, from proxy.toml) and notes (notes__echo needs it, from a
// policy file rule; notes__whoami does not). calls is the file where both
// record the calls that reach them.
type confirmSetup struct {
	cfg, calls string
}

func newConfirmSetup(t *testing.T, top string, tables ...string) confirmSetup {
	t.Helper()
	calls := filepath.Join(t.TempDir(), "calls.txt")
	cfg := writeConfig(t, top+"policy_files = [\"policy.toml\"]\n\n[audit]\nfile = \"audit.jsonl\"\narguments = true\n"+
		fixture("bank", []string{"-tools", "echo,args", "-calls", calls}, "confirm = true", `confirm_reason = "moves money"`)+
		fixture("notes", []string{"-tools", "echo,whoami", "-calls", calls})+strings.Join(tables, ""))
	policy := "[rules.notes]\nmatch = \"notes__echo\"\nconfirm = true\nreason = \"writes a note\"\n"
	if err := os.WriteFile(filepath.Join(filepath.Dir(cfg), "policy.toml"), []byte(policy), 0o644); err != nil {
		t.Fatal(err)
	}
	return confirmSetup{cfg: cfg, calls: calls}
}

// ran returns the calls that reached the servers, in order.
func (cs confirmSetup) ran(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(cs.calls)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return strings.Fields(strings.ReplaceAll(string(b), "\n", " | "))
}

// count returns how many calls reached the servers.
func (cs confirmSetup) count(t *testing.T) int {
	t.Helper()
	b, _ := os.ReadFile(cs.calls)
	return strings.Count(string(b), "\n")
}

// audit returns the audit lines of exposed, as confirm/approval-id-given/outcome.
func (cs confirmSetup) audit(exposed string) []string {
	b, _ := os.ReadFile(filepath.Join(filepath.Dir(cs.cfg), "audit.jsonl"))
	var out []string
	for line := range strings.Lines(string(b)) {
		var rec struct {
			Exposed, Confirm, Approval, Outcome string
		}
		if json.Unmarshal([]byte(line), &rec) == nil && rec.Exposed == exposed {
			out = append(out, fmt.Sprintf("%s/%v/%s", rec.Confirm, approvalIDRE.MatchString(rec.Approval), rec.Outcome))
		}
	}
	return out
}

var approvalIDRE = regexp.MustCompile(`^ap-[A-Z2-7]{26}$`)

// person is a client's elicitation handler: it answers as told and records
// what it was shown.
type person struct {
	mu     sync.Mutex
	answer string // accept, deny (accept with approve false), decline, cancel, hold; guarded by mu
	asked  []mcp.ElicitParams
	page   func(u string) // for URL mode: what the person does on the page, after the client opened it
	// release ends a hold: the request's end, or this closed, after which
	// the person accepts (too late).
	release chan struct{}
}

func (p *person) set(answer string) {
	p.mu.Lock()
	p.answer = answer
	p.mu.Unlock()
}

func (p *person) shown() []mcp.ElicitParams {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]mcp.ElicitParams(nil), p.asked...)
}

func (p *person) elicit(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	p.mu.Lock()
	p.asked = append(p.asked, *req.Params)
	answer, page := p.answer, p.page
	p.mu.Unlock()
	if req.Params.Mode == "url" && page != nil && answer == "accept" {
		go page(req.Params.URL)
		return &mcp.ElicitResult{Action: "accept"}, nil
	}
	switch answer {
	case "accept":
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
	case "deny":
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": false}}, nil
	case "hold":
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-p.release:
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
		}
	}
	return &mcp.ElicitResult{Action: answer}, nil
}

// client returns a go-sdk client that elicits through p (nil: a client
// without elicitation), with MRTR answered by the SDK unless raw.
func (p *person) client(name string, caps *mcp.ElicitationCapabilities, raw bool) *mcp.Client {
	opts := &mcp.ClientOptions{}
	if p != nil {
		opts.Capabilities = &mcp.ClientCapabilities{Elicitation: caps}
		opts.ElicitationHandler = p.elicit
	}
	if raw {
		opts.MultiRoundTrip = &mcp.MultiRoundTripOptions{Disabled: true}
	}
	return mcp.NewClient(&mcp.Implementation{Name: name, Version: "1"}, opts)
}

func formCaps() *mcp.ElicitationCapabilities {
	return &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}
}

// connectConfirm starts manifold with cfg over transport and connects
// client, offering version ("" lets the client pick: 2026-07-28).
func connectConfirm(t *testing.T, transport, cfg string, client *mcp.Client, version string) *mcp.ClientSession {
	t.Helper()
	if transport == "stdio" {
		return startStdioClient(t, cfg, client, version).cs
	}
	return connectHTTPClient(t, startHTTP(t, cfg), client, version)
}

func callOK(ctx context.Context, t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	return res
}

// TestConfirmElicitation: a client that elicits (form mode) in each era,
// over stdio and HTTP. Accept runs the call exactly once; deny, decline and
// cancel run nothing; the person sees the server, the tool, the reason and
// the exact arguments, with secrets masked; tools that need approval stay
// listed; a policy file rule asks too.
func TestConfirmElicitation(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ transport, version string }{
		{"stdio", protocolVersion}, {"http", protocolVersion}, {"stdio", ""}, {"http", ""},
	} {
		era := "legacy"
		if tc.version == "" {
			era = "modern"
		}
		t.Run(tc.transport+"/"+era, func(t *testing.T) {
			t.Parallel()
			setup := newConfirmSetup(t, "")
			p := &person{}
			cs := connectConfirm(t, tc.transport, setup.cfg, p.client("e2e-"+era, formCaps(), false), tc.version)
			if got := cs.InitializeResult().ProtocolVersion; (got == modernVersion) != (era == "modern") {
				t.Fatalf("negotiated %q for the %s era", got, era)
			}
			ctx := testCtx(t)
			waitTool(ctx, t, cs, "bank__echo")
			waitTool(ctx, t, cs, "notes__echo")

			p.set("accept")
			res := callOK(ctx, t, cs, "bank__args", map[string]any{"token": "tok-secret-1", "message": "pay bob 10"})
			if res.IsError || text(res) != `{"message":"pay bob 10","token":"tok-secret-1"}` {
				t.Fatalf("accepted call = %q (isError %v), want the server's answer", text(res), res.IsError)
			}
			if n := setup.count(t); n != 1 {
				t.Fatalf("calls that reached the server after one accepted call: %d, want 1 (%v)", n, setup.ran(t))
			}
			asked := p.shown()
			if len(asked) != 1 {
				t.Fatalf("the person was asked %d times, want 1", len(asked))
			}
			msg := asked[0].Message
			for _, want := range []string{"Server: bank", `Tool: bank__args ("args" on the server)`, "Why approval is needed: moves money",
				`"message": "pay bob 10"`, `"token": "[redacted]"`, "servers.bank.confirm at "} {
				if !strings.Contains(msg, want) {
					t.Errorf("the person's message lacks %q:\n%s", want, msg)
				}
			}
			if strings.Contains(msg, "tok-secret-1") || asked[0].Mode != "form" {
				t.Errorf("elicitation mode %q, message shows the secret or is not a form:\n%s", asked[0].Mode, msg)
			}

			for _, answer := range []string{"deny", "decline", "cancel"} {
				p.set(answer)
				res := callOK(ctx, t, cs, "bank__echo", map[string]any{"message": "pay bob 10"})
				if !res.IsError || !strings.Contains(text(res), "nothing was executed") {
					t.Errorf("%s: result %q (isError %v), want an isError saying nothing ran", answer, text(res), res.IsError)
				}
			}
			if n := setup.count(t); n != 1 {
				t.Errorf("calls that reached the server after deny, decline, cancel: %d, want still 1 (%v)", n, setup.ran(t))
			}

			// The policy file's rule asks too; a tool without one does not.
			p.set("decline")
			if res := callOK(ctx, t, cs, "notes__echo", map[string]any{"message": "n"}); !res.IsError {
				t.Errorf("notes__echo declined = %q, want isError", text(res))
			}
			if res := callOK(ctx, t, cs, "notes__whoami", nil); res.IsError || text(res) != "notes" {
				t.Errorf("notes__whoami = %q (isError %v), want it to run without approval", text(res), res.IsError)
			}
			if got := p.shown(); len(got) != 5 || !strings.Contains(got[4].Message, "Why approval is needed: writes a note") {
				t.Errorf("asked %d times; the last message should cite the policy file's reason: %+v", len(got), got)
			}
			if n := setup.count(t); n != 2 {
				t.Errorf("calls that reached the servers: %d, want 2 (the accepted one and notes__whoami): %v", n, setup.ran(t))
			}
			eventually(ctx, t, func() string {
				want := []string{"declined/true/declined by the person", "declined/true/declined by the person", "declined/true/declined by the person"}
				if got := setup.audit("bank__echo"); fmt.Sprint(got) != fmt.Sprint(want) {
					return fmt.Sprintf("audit of bank__echo (confirm/approval id/outcome) = %v, want %v", got, want)
				}
				if got := setup.audit("bank__args"); fmt.Sprint(got) != "[accepted/true/ok]" {
					return fmt.Sprintf("audit of bank__args = %v, want [accepted/true/ok]", got)
				}
				return ""
			})
		})
	}
}

// TestConfirmTimeout: a person who does not answer within confirm_ttl runs
// nothing, in both eras.
func TestConfirmTimeout(t *testing.T) {
	t.Parallel()
	for _, version := range []string{protocolVersion, ""} {
		t.Run("version "+version, func(t *testing.T) {
			t.Parallel()
			setup := newConfirmSetup(t, "confirm_ttl = \"1s\"\n")
			p := &person{answer: "hold", release: make(chan struct{})}
			cs := connectConfirm(t, "stdio", setup.cfg, p.client("e2e", formCaps(), false), version)
			ctx := testCtx(t)
			waitTool(ctx, t, cs, "bank__echo")
			type outcome struct {
				res *mcp.CallToolResult
				err error
			}
			done := make(chan outcome, 1)
			go func() {
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "bank__echo", Arguments: map[string]any{"message": "x"}})
				done <- outcome{res, err}
			}()
			// The proxy gives up first; then the person answers, too late
			// (a modern client retries with that answer).
			eventually(ctx, t, func() string {
				if got := setup.audit("bank__echo"); len(got) != 1 || got[0] != "timeout/true/approval timed out" {
					return fmt.Sprintf("audit = %v, want one timeout line with the approval id", got)
				}
				return ""
			})
			close(p.release)
			o := <-done
			if o.err != nil || !o.res.IsError || !strings.Contains(text(o.res), "No one approved this call") {
				t.Fatalf("unanswered approval = %+v, %v; want an isError saying no one approved", o.res, o.err)
			}
			if n := setup.count(t); n != 0 {
				t.Errorf("calls that reached the server: %d, want 0 (%v)", n, setup.ran(t))
			}
		})
	}
}

// TestConfirmModernRaw: a 2026-07-28 client answering input_required by
// hand. The approval is an elicitation input request; a retry that changes
// an argument, and a replay of a used requestState, run nothing.
func TestConfirmModernRaw(t *testing.T) {
	t.Parallel()
	for _, transport := range []string{"stdio", "http"} {
		t.Run(transport, func(t *testing.T) {
			t.Parallel()
			setup := newConfirmSetup(t, "")
			p := &person{}
			cs := connectConfirm(t, transport, setup.cfg, p.client("e2e-raw", formCaps(), true), "")
			ctx := testCtx(t)
			waitTool(ctx, t, cs, "bank__args")
			args := map[string]any{"to": "bob", "amount": 10}
			first := func(t *testing.T) *mcp.CallToolResult {
				t.Helper()
				res := callOK(ctx, t, cs, "bank__args", args)
				if !res.NeedsInput() || len(res.InputRequests) != 1 || res.RequestState == "" {
					t.Fatalf("first call = %+v, want input_required with one input request", res)
				}
				for _, ir := range res.InputRequests {
					if e, ok := ir.(*mcp.ElicitParams); !ok || !strings.Contains(e.Message, `"amount": 10`) {
						t.Fatalf("input request = %#v, want an elicitation showing the arguments", ir)
					}
				}
				return res
			}
			approve, deny := map[string]any{"approve": true}, map[string]any{"approve": false}

			t.Run("changed argument", func(t *testing.T) {
				wantChangedArgsRefused(ctx, t, setup, cs, first(t), args, approve)
			})
			t.Run("accept and replay", func(t *testing.T) {
				res := first(t)
				final, err := retryBankArgs(ctx, cs, res, map[string]any{"amount": 10, "to": "bob"}, approve)
				if err != nil || final.IsError || final.NeedsInput() || text(final) != `{"amount":10,"to":"bob"}` {
					t.Fatalf("accepted retry = %+v, %v; want the server's result", final, err)
				}
				_, err = retryBankArgs(ctx, cs, res, args, approve)
				wantInvalid(t, "replayed state", err, "no longer waiting")
				if n := setup.count(t); n != 1 {
					t.Errorf("calls that reached the server: %d, want 1 (%v)", n, setup.ran(t))
				}
			})
			t.Run("deny", func(t *testing.T) {
				res := first(t)
				final, err := retryBankArgs(ctx, cs, res, args, deny)
				if err != nil || !final.IsError {
					t.Fatalf("denied retry = %+v, %v; want isError", final, err)
				}
				if n := setup.count(t); n != 1 {
					t.Errorf("calls that reached the server: %d, want still 1 (%v)", n, setup.ran(t))
				}
			})
		})
	}
}

// approveCall runs `manifold approve-call --yes ID` as the person would.
func approveCall(t *testing.T, id string) (string, error) {
	t.Helper()
	cmd := command(manifoldBin, "approve-call", "--yes", id)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

var refusedIDRE = regexp.MustCompile(`manifold approve-call (ap-[A-Z2-7]{26})`)

// TestConfirmApproveCall: a client that cannot elicit gets an isError that
// names the approval id and the command; after `manifold approve-call ID`
// exactly one retry with the same arguments runs; a changed argument and a
// second use run nothing. Both eras; stdio and HTTP.
func TestConfirmApproveCall(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ transport, version string }{
		{"stdio", protocolVersion}, {"http", ""},
	} {
		t.Run(tc.transport+"/"+tc.version, func(t *testing.T) {
			t.Parallel()
			setup := newConfirmSetup(t, "")
			var p *person // no elicitation
			cs := connectConfirm(t, tc.transport, setup.cfg, p.client("e2e-cli", nil, false), tc.version)
			ctx := testCtx(t)
			waitTool(ctx, t, cs, "bank__echo")
			args := map[string]any{"message": "pay bob 10"}

			refused := func(t *testing.T, args map[string]any) string {
				t.Helper()
				res := callOK(ctx, t, cs, "bank__echo", args)
				m := refusedIDRE.FindStringSubmatch(text(res))
				if !res.IsError || m == nil || !strings.Contains(text(res), "needs a person's approval") || !strings.Contains(text(res), "No tool can give this approval") {
					t.Fatalf("call without approval = %q (isError %v), want the instructive error", text(res), res.IsError)
				}
				return m[1]
			}
			id := refused(t, args)
			if again := refused(t, args); again != id {
				t.Errorf("the same call again got approval %s, want the waiting %s", again, id)
			}
			out, err := approveCall(t, id)
			if err != nil || !strings.Contains(out, "Server: bank") || !strings.Contains(out, `"message": "pay bob 10"`) || !strings.Contains(out, "Approved "+id) {
				t.Fatalf("approve-call %s: %v\n%s", id, err, out)
			}
			if n := setup.count(t); n != 0 {
				t.Fatalf("calls that reached the server before the retry: %d", n)
			}
			if other := refused(t, map[string]any{"message": "pay bob 1000"}); other == id {
				t.Errorf("a changed argument used approval %s", id)
			}
			res := callOK(ctx, t, cs, "bank__echo", args)
			if res.IsError || text(res) != "bank: pay bob 10" {
				t.Fatalf("retry after approve-call = %q (isError %v), want it to run", text(res), res.IsError)
			}
			if next := refused(t, args); next == id {
				t.Errorf("a second retry used approval %s again", id)
			}
			if out, err := approveCall(t, id); err == nil || !strings.Contains(out, "no call waits for approval "+id) {
				t.Errorf("approve-call of a used id: %v\n%s", err, out)
			}
			if got := setup.ran(t); setup.count(t) != 1 {
				t.Errorf("calls that reached the server = %v, want exactly the approved one", got)
			}
			eventually(ctx, t, func() string {
				got := setup.audit("bank__echo")
				want := []string{"unavailable/true/needs approval", "unavailable/true/needs approval", "unavailable/true/needs approval", "accepted/true/ok", "unavailable/true/needs approval"}
				if fmt.Sprint(got) != fmt.Sprint(want) {
					return fmt.Sprintf("audit = %v, want %v", got, want)
				}
				return ""
			})
		})
	}
	t.Run("bad id", func(t *testing.T) {
		t.Parallel()
		if out, err := approveCall(t, "../../etc/passwd"); err == nil || !strings.Contains(out, "is not an approval id") {
			t.Errorf("approve-call of a path: %v\n%s", err, out)
		}
	})
}

// TestConfirmURLPage: over HTTP, a client that declared elicitation.url is
// sent to Manifold's own page; a real HTTP client reads it and posts the
// form. Approve runs the call once; Deny, a forged token and a cross-origin
// post run nothing.
func TestConfirmURLPage(t *testing.T) {
	t.Parallel()
	setup := newConfirmSetup(t, "")
	p := &person{answer: "accept"}
	var mu sync.Mutex
	choice := "approve"
	pageErrs := make(chan error, 10)
	p.page = func(u string) { pageErrs <- usePage(u, &mu, &choice) }
	caps := &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{}}
	hp := startHTTP(t, setup.cfg)
	cs := connectHTTPClient(t, hp, p.client("e2e-url", caps, false), protocolVersion)
	ctx := testCtx(t)
	waitTool(ctx, t, cs, "bank__echo")

	res := callOK(ctx, t, cs, "bank__echo", map[string]any{"message": "via page"})
	if err := <-pageErrs; err != nil {
		t.Fatalf("the page: %v", err)
	}
	if res.IsError || text(res) != "bank: via page" {
		t.Fatalf("approved on the page = %q (isError %v), want it to run", text(res), res.IsError)
	}
	asked := p.shown()
	if len(asked) != 1 || asked[0].Mode != "url" || !strings.HasPrefix(asked[0].URL, "http://"+hp.addr+"/approve/") {
		t.Fatalf("elicitations = %+v, want one URL-mode one pointing to the proxy's page", asked)
	}

	mu.Lock()
	choice = "deny"
	mu.Unlock()
	res = callOK(ctx, t, cs, "bank__echo", map[string]any{"message": "via page"})
	if err := <-pageErrs; err != nil {
		t.Fatalf("the page: %v", err)
	}
	if !res.IsError {
		t.Errorf("denied on the page = %q, want isError", text(res))
	}
	if n := setup.count(t); n != 1 {
		t.Errorf("calls that reached the server: %d, want 1 (%v)", n, setup.ran(t))
	}
	// A used page is gone.
	if resp, err := http.Get(asked[0].URL); err != nil || resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET of a used page: %v %v, want 404", resp, err)
	} else {
		resp.Body.Close()
	}
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// usePage is the person on the approval page at u: it checks that a forged
// token and a cross-origin post are refused, then posts the choice.
func usePage(u string, mu *sync.Mutex, choice *string) error {
	resp, err := http.Get(u)
	if err != nil {
		return err
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "via page") || !strings.Contains(string(body), "moves money") {
		return fmt.Errorf("GET %s: %s\n%s", u, resp.Status, body)
	}
	m := csrfRE.FindStringSubmatch(string(body))
	if m == nil {
		return fmt.Errorf("no csrf token in the page:\n%s", body)
	}
	post := func(form url.Values, origin string) (int, error) {
		req, err := http.NewRequest(http.MethodPost, u, strings.NewReader(form.Encode()))
		if err != nil {
			return 0, err
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	if code, err := post(url.Values{"csrf": {"forged"}, "answer": {"approve"}}, ""); err != nil || code != http.StatusForbidden {
		return fmt.Errorf("post with a forged token: %d %v, want 403", code, err)
	}
	pu, _ := url.Parse(u)
	if code, err := post(url.Values{"csrf": {m[1]}, "answer": {"approve"}}, "http://evil.example"); err != nil || code != http.StatusForbidden {
		return fmt.Errorf("cross-origin post: %d %v, want 403", code, err)
	}
	mu.Lock()
	c := *choice
	mu.Unlock()
	if code, err := post(url.Values{"csrf": {m[1]}, "answer": {c}}, "http://"+pu.Host); err != nil || code != http.StatusOK {
		return fmt.Errorf("post %s: %d %v, want 200", c, code, err)
	}
	return nil
}

// TestConfirmSearchSurface: the call tools of the search surface go through
// the same approval.
func TestConfirmSearchSurface(t *testing.T) {
	t.Parallel()
	setup := newConfirmSetup(t, "", "\n[catalog]\nmode = \"search\"\n")
	p := &person{}
	cs := connectConfirm(t, "stdio", setup.cfg, p.client("e2e-search", formCaps(), false), protocolVersion)
	ctx := testCtx(t)
	waitTool(ctx, t, cs, "call_tool_destructive")
	inner := map[string]any{"name": "bank__echo", "arguments": map[string]any{"message": "surfaced"}}
	p.set("decline")
	if res := callOK(ctx, t, cs, "call_tool_destructive", inner); !res.IsError || !strings.Contains(text(res), "nothing was executed") {
		t.Errorf("declined through call_tool_destructive = %q (isError %v), want isError", text(res), res.IsError)
	}
	if n := setup.count(t); n != 0 {
		t.Fatalf("calls that reached the server after a decline: %d", n)
	}
	p.set("accept")
	if res := callOK(ctx, t, cs, "call_tool_destructive", inner); res.IsError || text(res) != "bank: surfaced" {
		t.Errorf("accepted through call_tool_destructive = %q (isError %v), want it to run", text(res), res.IsError)
	}
	if n := setup.count(t); n != 1 || len(p.shown()) != 2 {
		t.Errorf("calls that reached the server: %d, person asked %d times; want 1 and 2", n, len(p.shown()))
	}
}

// TestConfirmExplain: `manifold explain` cites where approval is asked,
// from proxy.toml and from a policy file.
func TestConfirmExplain(t *testing.T) {
	t.Parallel()
	setup := newConfirmSetup(t, "")
	for name, want := range map[string]string{
		"bank__echo":    "/proxy.toml:10): moves money",
		"notes__echo":   `exposed; needs a person's approval per call (rule "notes" at policy.toml:1): writes a note`,
		"notes__whoami": "exposed",
	} {
		out, err := command(manifoldBin, "explain", "--config", setup.cfg, name).CombinedOutput()
		if err != nil || !strings.Contains(string(out), want) || name == "notes__whoami" && strings.Contains(string(out), "approval") {
			t.Errorf("explain %s: %v\n%s\nwant %q", name, err, out, want)
		}
	}
}

// openPage is the person on a URL-mode approval page at u, with a plain
// HTTP client (not the MCP client): it reads the page, checks that it shows
// want, and posts answer ("approve" or "deny") with the page's token from
// the page's own origin. It returns the status of the post.
func openPage(ctx context.Context, t *testing.T, u, want, answer string) int {
	t.Helper()
	body := httpGet(ctx, t, u)
	if !strings.Contains(body, want) {
		t.Fatalf("the approval page at %s does not show %q:\n%s", u, want, body)
	}
	m := csrfRE.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no csrf token in the page:\n%s", body)
	}
	return postPage(ctx, t, u, m[1], answer)
}

// postPage posts answer with the token csrf to the page at u, from its own
// origin, and returns the status.
func postPage(ctx context.Context, t *testing.T, u, csrf, answer string) int {
	t.Helper()
	pu, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, strings.NewReader(url.Values{"csrf": {csrf}, "answer": {answer}}.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", "http://"+pu.Host)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", u, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestConfirmURLModern: a 2026-07-28 go-sdk client over HTTP that declared
// elicitation.url gets the approval as a URL-mode elicitation inside
// input_required, pointing to Manifold's own page; the person (the test
// with an http.Client) opens the page and answers there, and the client's
// retry carries only "accept" (it opened the page), which approves nothing
// by itself. Approved, the call runs exactly once with the exact
// arguments; a denial, an expiry, a replay of the used page or of the
// requestState, and changed arguments after the approval run nothing.
func TestConfirmURLModern(t *testing.T) {
	t.Parallel()
	caps := &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{}}
	start := func(t *testing.T, top string) (confirmSetup, *httpProxy, *mcp.ClientSession) {
		t.Helper()
		setup := newConfirmSetup(t, top)
		hp := startHTTP(t, setup.cfg)
		p := &person{}
		cs := connectHTTPClient(t, hp, p.client("e2e-url-modern", caps, true), "")
		if got := cs.InitializeResult().ProtocolVersion; got != modernVersion {
			t.Fatalf("negotiated %q, want %s", got, modernVersion)
		}
		waitTool(testCtx(t), t, cs, "bank__args")
		return setup, hp, cs
	}
	args := map[string]any{"to": "bob", "amount": 10}
	// first calls bank__args and returns the input_required result and the
	// page's URL, checked to be a URL-mode elicitation of the proxy's page.
	first := func(ctx context.Context, t *testing.T, hp *httpProxy, cs *mcp.ClientSession) (*mcp.CallToolResult, string) {
		t.Helper()
		res := callOK(ctx, t, cs, "bank__args", args)
		if !res.NeedsInput() || len(res.InputRequests) != 1 || res.RequestState == "" {
			t.Fatalf("first call = %+v, want input_required with one input request", res)
		}
		for _, ir := range res.InputRequests {
			e, ok := ir.(*mcp.ElicitParams)
			if !ok || e.Mode != "url" || !strings.HasPrefix(e.URL, "http://"+hp.addr+"/approve/") || e.ElicitationID == "" {
				t.Fatalf("input request = %#v, want a URL-mode elicitation of http://%s/approve/…", ir, hp.addr)
			}
			if strings.Contains(e.Message, "amount") {
				t.Errorf("the URL-mode message shows the arguments (the page does): %q", e.Message)
			}
			return res, e.URL
		}
		panic("unreachable")
	}

	t.Run("approve, then replays", func(t *testing.T) {
		t.Parallel()
		setup, hp, cs := start(t, "")
		ctx := testCtx(t)
		res, page := first(ctx, t, hp, cs)
		if n := setup.count(t); n != 0 {
			t.Fatalf("calls that reached the server before the approval: %d", n)
		}
		if code := openPage(ctx, t, page, `&#34;amount&#34;: 10`, "approve"); code != http.StatusOK {
			t.Fatalf("approve on the page: %d, want 200", code)
		}
		final, err := retryBankArgs(ctx, cs, res, map[string]any{"amount": 10, "to": "bob"}, nil) // same arguments, other order
		if err != nil || final.IsError || final.NeedsInput() || text(final) != `{"amount":10,"to":"bob"}` {
			t.Fatalf("retry after the approval = %+v, %v; want the server's result", final, err)
		}
		if got := setup.ran(t); fmt.Sprint(got) != `[call args {"amount":10,"to":"bob"} |]` {
			t.Errorf("calls that reached the server = %v, want exactly the approved one", got)
		}
		// Replays: the used page, and the used requestState.
		if resp, err := http.Get(page); err != nil || resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET of the used page: %v %v, want 404", resp, err)
		} else {
			resp.Body.Close()
		}
		if code := postPage(ctx, t, page, "any", "approve"); code != http.StatusNotFound {
			t.Errorf("POST to the used page: %d, want 404", code)
		}
		_, err = retryBankArgs(ctx, cs, res, args, nil)
		wantInvalid(t, "replayed requestState", err, "no longer waiting")
		if n := setup.count(t); n != 1 {
			t.Errorf("calls that reached the server after the replays: %d, want 1 (%v)", n, setup.ran(t))
		}
		eventually(ctx, t, func() string {
			if got := setup.audit("bank__args"); fmt.Sprint(got) != "[accepted/true/ok]" {
				return fmt.Sprintf("audit of bank__args = %v, want [accepted/true/ok]", got)
			}
			return ""
		})
	})
	t.Run("deny", func(t *testing.T) {
		t.Parallel()
		setup, hp, cs := start(t, "")
		ctx := testCtx(t)
		res, page := first(ctx, t, hp, cs)
		if code := openPage(ctx, t, page, "moves money", "deny"); code != http.StatusOK {
			t.Fatalf("deny on the page: %d, want 200", code)
		}
		final, err := retryBankArgs(ctx, cs, res, args, nil)
		if err != nil || !final.IsError || !strings.Contains(text(final), "nothing was executed") {
			t.Fatalf("retry after a denial = %+v, %v; want an isError saying nothing ran", final, err)
		}
		if n := setup.count(t); n != 0 {
			t.Errorf("calls that reached the server after a denial: %d (%v)", n, setup.ran(t))
		}
	})
	t.Run("changed arguments after approval", func(t *testing.T) {
		t.Parallel()
		setup, hp, cs := start(t, "")
		ctx := testCtx(t)
		res, page := first(ctx, t, hp, cs)
		if code := openPage(ctx, t, page, `&#34;amount&#34;: 10`, "approve"); code != http.StatusOK {
			t.Fatalf("approve on the page: %d, want 200", code)
		}
		wantChangedArgsRefused(ctx, t, setup, cs, res, args, nil)
	})
	t.Run("expiry", func(t *testing.T) {
		t.Parallel()
		setup, hp, cs := start(t, "confirm_ttl = \"2s\"\n")
		ctx := testCtx(t)
		res, page := first(ctx, t, hp, cs)
		// The proxy gives up first (an event in the audit log, not a
		// clock); then the person comes, too late.
		eventually(ctx, t, func() string {
			if got := setup.audit("bank__args"); len(got) != 1 || got[0] != "timeout/true/approval timed out" {
				return fmt.Sprintf("audit = %v, want one timeout line with the approval id", got)
			}
			return ""
		})
		if resp, err := http.Get(page); err != nil || resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET of an expired page: %v %v, want 404", resp, err)
		} else {
			resp.Body.Close()
		}
		final, err := retryBankArgs(ctx, cs, res, args, nil)
		if err == nil && (!final.IsError || final.NeedsInput()) {
			t.Errorf("retry after the expiry = %+v; want an isError or an error", final)
		}
		if n := setup.count(t); n != 0 {
			t.Errorf("calls that reached the server after the expiry: %d (%v)", n, setup.ran(t))
		}
	})
}

// retryBankArgs retries the call of bank__args that res asked input for,
// with args, answering each of its input requests "accept" with content
// (nil: no content, as a client that opened a URL-mode page does).
func retryBankArgs(ctx context.Context, cs *mcp.ClientSession, res *mcp.CallToolResult, args, content map[string]any) (*mcp.CallToolResult, error) {
	answers := mcp.InputResponseMap{}
	for k := range res.InputRequests {
		answers[k] = &mcp.ElicitResult{Action: "accept", Content: content}
	}
	return cs.CallTool(ctx, &mcp.CallToolParams{Name: "bank__args", Arguments: args, InputResponses: answers, RequestState: res.RequestState})
}

// wantInvalid fails t unless err is a JSON-RPC invalid-params error
// (-32602) whose message contains contains; what names the request.
func wantInvalid(t *testing.T, what string, err error, contains string) {
	t.Helper()
	var rpcErr *jsonrpc.Error
	if !errors.As(err, &rpcErr) || rpcErr.Code != jsonrpc.CodeInvalidParams || !strings.Contains(rpcErr.Message, contains) {
		t.Errorf("%s: got %v, want -32602 saying %q", what, err, contains)
	}
}

// wantChangedArgsRefused retries the call of bank__args that res asked input
// for with another amount (answering with content, as retryBankArgs), and
// then with args: the first is refused as arguments that differ, the second
// because the call was dropped, and nothing reaches the server.
func wantChangedArgsRefused(ctx context.Context, t *testing.T, setup confirmSetup, cs *mcp.ClientSession, res *mcp.CallToolResult, args, content map[string]any) {
	t.Helper()
	_, err := retryBankArgs(ctx, cs, res, map[string]any{"to": "bob", "amount": 1000}, content)
	wantInvalid(t, "retry with another amount", err, "arguments differ")
	_, err = retryBankArgs(ctx, cs, res, args, content) // the call was dropped
	wantInvalid(t, "retry after the change", err, "no longer waiting")
	if n := setup.count(t); n != 0 {
		t.Errorf("calls that reached the server: %d, want 0 (%v)", n, setup.ran(t))
	}
}
