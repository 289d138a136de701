package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"sync"
	"testing"
	"time"
)

// rawMessage is a JSON-RPC message as it appears on the wire.
type rawMessage struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   json.RawMessage `json:"error"`
}

// rawStdio is manifold serve driven through raw pipes.
type rawStdio struct {
	*proc
	stdin io.WriteCloser
	lines chan []byte // every stdout line, in order; closed at EOF
	mu    sync.Mutex
	all   [][]byte // guarded by mu: every stdout line read so far
}

func startRaw(t *testing.T, cfg string) *rawStdio {
	t.Helper()
	p := &proc{t: t, stderr: &syncBuffer{}}
	p.cmd = command(manifoldBin, "serve", "--config", cfg)
	p.cmd.Stderr = p.stderr
	p.cmd.WaitDelay = 5 * time.Second
	stdin, err := p.cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := &rawStdio{proc: p, stdin: stdin, lines: make(chan []byte, 100)}
	go func() {
		defer close(r.lines)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 64<<20)
		for sc.Scan() {
			line := bytes.Clone(sc.Bytes())
			r.mu.Lock()
			r.all = append(r.all, line)
			r.mu.Unlock()
			r.lines <- line // stop drains what no one awaited
		}
	}()
	t.Cleanup(p.logOnFailure)
	t.Cleanup(func() {
		if code := p.stop(r.end); code != 0 {
			t.Errorf("manifold exited with status %d after stdin closed, want 0", code)
		}
	})
	return r
}

// end closes manifold's stdin and waits for it to exit.
func (r *rawStdio) end() {
	_ = r.stdin.Close()
	for range r.lines { // stdout reaches EOF when manifold exits
	}
	_ = r.cmd.Wait()
}

func (r *rawStdio) send(t *testing.T, line string) {
	t.Helper()
	if _, err := io.WriteString(r.stdin, line+"\n"); err != nil {
		t.Fatalf("write %s: %v", line, err)
	}
}

// await reads stdout until the response with the given raw id, checking
// that each line is a JSON-RPC message.
func (r *rawStdio) await(t *testing.T, id string) rawMessage {
	t.Helper()
	deadline := time.After(testTimeout)
	for {
		select {
		case line, ok := <-r.lines:
			if !ok {
				t.Fatalf("stdout ended before the response to id %s", id)
			}
			m, err := parseFrame(line)
			if err != nil {
				t.Fatalf("stdout line %q: %v", line, err)
			}
			if m.Method == "" && string(m.ID) == id {
				return m
			}
		case <-deadline:
			t.Fatalf("no response to id %s within %s", id, testTimeout)
		}
	}
}

// parseFrame checks that line is exactly one JSON-RPC 2.0 message.
func parseFrame(line []byte) (rawMessage, error) {
	var m rawMessage
	dec := json.NewDecoder(bytes.NewReader(line))
	if err := dec.Decode(&m); err != nil {
		return m, err
	}
	if dec.More() {
		return m, errString("more than one JSON value on the line")
	}
	switch {
	case m.JSONRPC != "2.0":
		return m, errString(`"jsonrpc" is not "2.0"`)
	case m.Method == "" && len(m.ID) == 0:
		return m, errString("neither a request, a notification nor a response")
	case m.Method == "" && len(m.Result) == 0 && len(m.Error) == 0:
		return m, errString("a response with neither result nor error")
	}
	return m, nil
}

type errString string

func (e errString) Error() string { return string(e) }

func TestStdoutCarriesOnlyFrames(t *testing.T) {
	t.Parallel()
	// noise prints junk on its stdout; none of it may reach manifold's.
	cfg := fixture("alpha", nil) + fixture("noise", []string{"-mode", "noise"})
	r := startRaw(t, writeConfig(t, cfg))

	r.send(t, `{"jsonrpc":"2.0","id":"a-1","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`)
	if m := r.await(t, `"a-1"`); len(m.Result) == 0 {
		t.Fatalf("initialize: %s", m.Error)
	}
	r.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	r.send(t, `{"jsonrpc":"2.0","id":7,"method":"tools/list"}`)
	m := r.await(t, `7`)
	var list struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(m.Result, &list); err != nil {
		t.Fatalf("tools/list result %s: %v", m.Result, err)
	}
	var names []string
	for _, tool := range list.Tools {
		names = append(names, tool.Name)
	}
	for _, want := range []string{"alpha__echo", "noise__echo", "alpha__args"} {
		if !strings.Contains(" "+strings.Join(names, " ")+" ", " "+want+" ") {
			t.Errorf("tools/list lacks %s: %v", want, names)
		}
	}

	tests := []struct {
		name     string
		id       string // as written on the wire
		params   string
		wantText string
	}{
		{name: "string id", id: `"c-1"`, params: `{"name":"alpha__echo","arguments":{"message":"hi"}}`, wantText: "alpha: hi"},
		{name: "noisy server", id: `8`, params: `{"name":"noise__echo","arguments":{"message":"hi"}}`, wantText: "noise: hi"},
		{name: "absent arguments stay absent", id: `9`, params: `{"name":"alpha__args"}`, wantText: "<absent>"},
		{name: "noisy server, absent arguments", id: `"n-10"`, params: `{"name":"noise__args"}`, wantText: "<absent>"},
		{name: "arguments byte-exact", id: `11`, params: `{"name":"alpha__args","arguments":{"b":1e400,"a":"é\u00e9","n":[12345678901234567890,-0.0]}}`,
			wantText: `{"b":1e400,"a":"é\u00e9","n":[12345678901234567890,-0.0]}`},
		{name: "zero id", id: `0`, params: `{"name":"alpha__echo","arguments":{"message":"zero"}}`, wantText: "alpha: zero"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r.send(t, `{"jsonrpc":"2.0","id":`+tt.id+`,"method":"tools/call","params":`+tt.params+`}`)
			m := r.await(t, tt.id)
			var res struct {
				Content []struct {
					Text string `json:"text"`
				} `json:"content"`
				IsError bool `json:"isError"`
			}
			if err := json.Unmarshal(m.Result, &res); err != nil || len(res.Content) != 1 {
				t.Fatalf("result %s, error %s: want one text content", m.Result, m.Error)
			}
			if res.Content[0].Text != tt.wantText || res.IsError {
				t.Errorf("text %q (isError %v), want %q", res.Content[0].Text, res.IsError, tt.wantText)
			}
		})
	}

	// Close stdin; every line manifold printed, to its exit, must be a frame.
	r.stop(r.end) // the cleanup checks the exit status
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.all) == 0 {
		t.Fatal("no stdout lines at all")
	}
	for i, line := range r.all {
		if _, err := parseFrame(line); err != nil {
			t.Errorf("stdout line %d %q is not a JSON-RPC message: %v", i+1, line, err)
		}
	}
}
