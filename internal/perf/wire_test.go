package perf

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// wire is a client that speaks JSON-RPC lines (stdio) or POSTs (streamable
// HTTP) and times a request to the last byte of its answer, without
// decoding it: what a server costs a client before the client's own
// decoding, which is the same for a proxy and a direct server. (A go-sdk
// client spends tens of ms decoding the schemas of 1,000 tools, which
// would hide the server's share.)
type wire struct {
	// stdio
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
	// HTTP
	url, session string
	hc           *http.Client

	version string
	id      int
}

// startWire starts a stdio server and initializes a session with it.
func startWire(tb testing.TB, version, name string, args ...string) *wire {
	tb.Helper()
	p, err := startPiped((*exec.Cmd).StdoutPipe, name, args...)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { p.stop(0) })
	return p.wire(version).open(tb)
}

// dialWire initializes a session with a streamable HTTP endpoint.
func dialWire(tb testing.TB, version, url string) *wire {
	tb.Helper()
	w := &wire{url: url, hc: &http.Client{Timeout: 30 * time.Second}, version: version}
	return w.open(tb)
}

// open initializes w's session within 30 s, and returns w.
func (w *wire) open(tb testing.TB) *wire {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := w.initialize(ctx); err != nil {
		tb.Fatal(err)
	}
	return w
}

// piped is a server process started with its stdin and one of its outputs
// on pipes.
type piped struct {
	cmd   *exec.Cmd
	in    io.WriteCloser
	out   io.ReadCloser // its stdout or its stderr, as startPiped was asked
	start time.Time     // just before the exec
}

// startPiped execs name with args, with its stdin on a pipe and the output
// that pipe opens ((*exec.Cmd).StdoutPipe or StderrPipe) on another; the
// other output is discarded. The caller stops it with stop.
func startPiped(pipe func(*exec.Cmd) (io.ReadCloser, error), name string, args ...string) (piped, error) {
	p := piped{cmd: exec.Command(name, args...)}
	var err error
	if p.in, err = p.cmd.StdinPipe(); err != nil {
		return p, err
	}
	if p.out, err = pipe(p.cmd); err != nil {
		return p, err
	}
	p.start = time.Now()
	if err := p.cmd.Start(); err != nil {
		return p, err
	}
	return p, nil
}

// wire returns a wire client of version on p's stdin and stdout.
func (p piped) wire(version string) *wire {
	return &wire{cmd: p.cmd, in: p.in, out: bufio.NewReaderSize(p.out, 1<<20), version: version}
}

// stop closes p's stdin and waits for p to end. If term > 0 and p is still
// there after term, it gets SIGTERM, as from a service manager (manifold
// serve --http does not end with its stdin); if it is still there 5 s
// later, it is killed (by its pid).
func (p piped) stop(term time.Duration) {
	_ = p.in.Close()
	done := make(chan struct{})
	go func() { _ = p.cmd.Wait(); close(done) }()
	if term > 0 {
		select {
		case <-done:
			return
		case <-time.After(term):
			_ = p.cmd.Process.Signal(syscall.SIGTERM)
		}
	}
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		_ = p.cmd.Process.Kill()
		<-done
	}
}

// modernVersion is the first protocol version without initialize: each
// request describes its client in _meta (and over HTTP in headers).
const modernVersion = "2026-07-28"

// modern reports whether w speaks 2026-07-28 or later.
func (w *wire) modern() bool { return w.version >= modernVersion }

// initialize opens the session: initialize, then
// notifications/initialized. A 2026-07-28 client has no session to open.
func (w *wire) initialize(ctx context.Context) error {
	if w.modern() {
		return nil
	}
	params := fmt.Sprintf(`{"protocolVersion":%q,"capabilities":{},"clientInfo":{"name":"perf","version":"0"}}`, w.version)
	if _, err := w.call(ctx, "initialize", params); err != nil {
		return fmt.Errorf("initialize: %w", err)
	}
	if err := w.notify(ctx, "notifications/initialized"); err != nil {
		return fmt.Errorf("notifications/initialized: %w", err)
	}
	return nil
}

// call sends one request and returns the bytes of its answer (for HTTP, the
// whole body: one JSON object or an event stream).
func (w *wire) call(ctx context.Context, method, params string) ([]byte, error) {
	w.id++
	if w.modern() {
		params = w.withMeta(params)
	}
	req := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, w.id, method, params)
	if w.cmd != nil {
		if _, err := io.WriteString(w.in, req+"\n"); err != nil {
			return nil, err
		}
		idMember := []byte(`"id":` + strconv.Itoa(w.id))
		for {
			line, err := w.out.ReadBytes('\n')
			if err != nil {
				return nil, err
			}
			// An answer carries its id near the start; notifications and
			// server requests in between are skipped.
			if i := bytes.Index(line[:min(len(line), 64)], idMember); i >= 0 {
				if rest := line[i+len(idMember):]; len(rest) > 0 && (rest[0] == ',' || rest[0] == '}') {
					return line, nil
				}
			}
		}
	}
	body, _, err := w.post(ctx, req, method, params)
	return body, err
}

// withMeta returns params, an object, with the _meta by which a 2026-07-28
// request describes its client as its first member.
func (w *wire) withMeta(params string) string {
	meta := fmt.Sprintf(`"_meta":{"io.modelcontextprotocol/protocolVersion":%q,"io.modelcontextprotocol/clientInfo":{"name":"perf","version":"0"},"io.modelcontextprotocol/clientCapabilities":{}}`, w.version)
	rest := strings.TrimSpace(params)[1:]
	if strings.TrimSpace(rest) != "}" {
		meta += ","
	}
	return "{" + meta + rest
}

func (w *wire) notify(ctx context.Context, method string) error {
	n := fmt.Sprintf(`{"jsonrpc":"2.0","method":%q}`, method)
	if w.cmd != nil {
		_, err := io.WriteString(w.in, n+"\n")
		return err
	}
	_, _, err := w.post(ctx, n, method, "")
	return err
}

// post sends body, a message of method with params, and returns the
// response's body and status. A 2026-07-28 request carries the headers
// that repeat its version, method and name.
func (w *wire) post(ctx context.Context, body, method, params string) ([]byte, int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.url, strings.NewReader(body))
	if err != nil {
		return nil, 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if w.session != "" {
		req.Header.Set("Mcp-Session-Id", w.session)
		req.Header.Set("Mcp-Protocol-Version", w.version)
	}
	if w.modern() {
		req.Header.Set("Mcp-Protocol-Version", w.version)
		req.Header.Set("Mcp-Method", method)
		var p struct{ Name string }
		if json.Unmarshal([]byte(params), &p) == nil && p.Name != "" {
			req.Header.Set("Mcp-Name", p.Name)
		}
	}
	resp, err := w.hc.Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, resp.StatusCode, err
	}
	if resp.StatusCode/100 != 2 {
		return nil, resp.StatusCode, fmt.Errorf("HTTP %s: %s", resp.Status, b)
	}
	if s := resp.Header.Get("Mcp-Session-Id"); s != "" {
		w.session = s
	}
	return b, resp.StatusCode, nil
}

// listTools fetches every page of tools/list and returns the answers' bytes.
func (w *wire) listTools(ctx context.Context) ([][]byte, error) {
	var pages [][]byte
	params := `{}`
	for {
		b, err := w.call(ctx, "tools/list", params)
		if err != nil {
			return nil, err
		}
		pages = append(pages, b)
		cursor, ok := nextCursor(b)
		if !ok {
			return pages, nil
		}
		params = `{"cursor":` + strconv.Quote(cursor) + `}`
	}
}

// nextCursor finds the answer's nextCursor without decoding the answer.
func nextCursor(b []byte) (string, bool) {
	const key = `"nextCursor":"`
	i := bytes.LastIndex(b, []byte(key))
	if i < 0 {
		return "", false
	}
	rest := b[i+len(key):]
	j := bytes.IndexByte(rest, '"')
	if j <= 0 {
		return "", false
	}
	return string(rest[:j]), true
}

// toolNames decodes the answers of listTools: the names of the tools.
func toolNames(pages [][]byte) ([]string, error) {
	var names []string
	for _, b := range pages {
		if bytes.HasPrefix(bytes.TrimSpace(b), []byte("event:")) {
			// An event stream: the answer is the data of its last event
			// that has any (a resumable stream opens with an empty one).
			var last []byte
			for line := range bytes.SplitSeq(b, []byte("\n")) {
				if d, ok := bytes.CutPrefix(line, []byte("data:")); ok && len(bytes.TrimSpace(d)) > 0 {
					last = d
				}
			}
			if last == nil {
				return nil, fmt.Errorf("no data in %.200q", b)
			}
			b = last
		}
		var msg struct {
			Result *struct {
				Tools []struct{ Name string }
			}
			Error json.RawMessage
		}
		if err := json.Unmarshal(b, &msg); err != nil {
			return nil, fmt.Errorf("decode %.200q: %w", b, err)
		}
		if msg.Result == nil {
			return nil, fmt.Errorf("no result: %s", msg.Error)
		}
		for _, t := range msg.Result.Tools {
			names = append(names, t.Name)
		}
	}
	return names, nil
}
