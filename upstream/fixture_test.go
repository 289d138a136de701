//go:build linux

package upstream

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"
)

// The test binary doubles as the MCP server under test: with
// UPSTREAM_TEST_FIXTURE=<mode> set, TestMain runs the fixture instead of the
// tests. UPSTREAM_TEST_FILE names a file the fixture writes events or pids to.
const (
	envMode = "UPSTREAM_TEST_FIXTURE"
	envFile = "UPSTREAM_TEST_FILE"
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(envMode); mode != "" {
		runFixture(mode)
		return
	}
	goleak.VerifyTestMain(m)
}

// runFixture runs one fixture mode and exits.
func runFixture(mode string) {
	log.SetFlags(0)
	ctx := context.Background()
	switch mode {
	case "serve":
		serve(ctx, &mcp.StdioTransport{})
	case "noise":
		fmt.Println("Starting fixture server... (not JSON)")
		serve(ctx, &mcp.IOTransport{Reader: os.Stdin, Writer: &noisyWriter{w: os.Stdout}})
	case "exit3":
		fmt.Fprintln(os.Stderr, "loading config")
		fmt.Fprintln(os.Stderr, "fatal: config missing")
		os.Exit(3)
	case "hang":
		writeEvent(strconv.Itoa(os.Getpid()))
		fmt.Fprintln(os.Stderr, "hanging before initialize")
		time.Sleep(time.Hour)
	case "ignore-term":
		signal.Ignore(syscall.SIGTERM)
		writeEvent(strconv.Itoa(os.Getpid()))
		serve(ctx, &mcp.StdioTransport{})
		time.Sleep(time.Hour) // and ignore stdin EOF too
	case "ignore-eof":
		serve(ctx, &mcp.StdioTransport{})
		time.Sleep(time.Hour) // after stdin ends; SIGTERM's default action ends it
	case "spawn-child":
		self, err := os.Executable()
		if err != nil {
			log.Fatal(err)
		}
		gc := exec.Command(self)
		gc.Env = append(os.Environ(), envMode+"=sleeper")
		gc.Stderr = os.Stderr // holds the stderr pipe open, like a real grandchild
		if err := gc.Start(); err != nil {
			log.Fatal(err)
		}
		writeEvent(strconv.Itoa(gc.Process.Pid))
		serve(ctx, &mcp.StdioTransport{})
	case "sleeper":
		time.Sleep(300 * time.Second)
	case "modern", "legacy", "dual":
		writeEvent("start " + strconv.Itoa(os.Getpid()))
		serve(ctx, &mcp.IOTransport{Reader: countDiscover(os.Stdin, ""), Writer: os.Stdout})
	case "d-chatty", "d-methodnotfound", "d-error", "d-ignore", "d-exit", "d-garbage", "d-notresult", "d-no2026", "d-wrongid",
		"d-deaf", "d-deafgarbage", "d-slowmodern":
		writeEvent("start " + strconv.Itoa(os.Getpid()))
		if mode == "d-slowmodern" {
			// The first process starts slower than the probe waits (npx
			// installing it); the ones after are quick.
			marker := os.Getenv(envFile) + ".installed"
			if _, err := os.Stat(marker); err != nil {
				time.Sleep(time.Second)
				_ = os.WriteFile(marker, nil, 0o600)
			}
		}
		serve(ctx, &mcp.IOTransport{Reader: countDiscover(os.Stdin, strings.TrimPrefix(mode, "d-")), Writer: &lockedStdout})
	default:
		log.Fatalf("unknown fixture mode %q", mode)
	}
	os.Exit(0)
}

func serve(ctx context.Context, t mcp.Transport) {
	if err := newFixtureServer().Run(ctx, t); err != nil {
		log.Print(err)
	}
}

// lockedStdout serialises frames of the server and of countDiscover.
var lockedStdout = lockedWriter{w: os.Stdout}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (l *lockedWriter) Close() error { return nil }

// countDiscover passes stdin on, recording "discover <pid>" for each
// server/discover request and answering it itself as how says ("" lets the
// server answer).
func countDiscover(in io.Reader, how string) io.ReadCloser {
	pr, pw := io.Pipe()
	go func() {
		br := bufio.NewReader(in)
		for {
			line, err := br.ReadBytes('\n')
			var req struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			if len(line) > 0 && bytes.Contains(line, []byte(`"initialize"`)) && json.Unmarshal(line, &req) == nil && req.Method == "initialize" {
				writeEvent("initialize " + strconv.Itoa(os.Getpid()))
			}
			if len(line) > 0 && json.Unmarshal(line, &req) == nil && req.Method == "server/discover" {
				writeEvent("discover " + strconv.Itoa(os.Getpid()))
				reply := func(body string) {
					fmt.Fprintf(&lockedStdout, `{"jsonrpc":"2.0","id":%s,%s}`+"\n", req.ID, body)
				}
				handled := true
				switch how {
				case "", "slowmodern":
					handled = false
				case "chatty": // notifications first, then the server's answer
					for i := range 3 {
						fmt.Fprintf(&lockedStdout, `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"early %d"}}`+"\n", i)
					}
					handled = false
				case "methodnotfound":
					reply(`"error":{"code":-32601,"message":"Method not found"}`)
				case "error":
					reply(`"error":{"code":-32000,"message":"busy"}`)
				case "ignore", "deaf":
				case "deafgarbage":
					fmt.Fprintln(&lockedStdout, "discover what?")
				case "exit":
					os.Exit(5)
				case "garbage":
					fmt.Fprintln(&lockedStdout, "discover what?")
				case "notresult":
					reply(`"result":{"supportedVersions":"2026-07-28"}`)
				case "no2026":
					reply(`"result":{"supportedVersions":["2025-11-25"],"capabilities":{}}`)
				case "wrongid":
					fmt.Fprintln(&lockedStdout, `{"jsonrpc":"2.0","id":"mf.77","result":{"supportedVersions":["2026-07-28"],"capabilities":{}}}`)
					fmt.Fprintln(&lockedStdout, `{"jsonrpc":"2.0","id":123456,"result":{"supportedVersions":["2026-07-28"],"capabilities":{}}}`)
				}
				if handled {
					continue
				}
			}
			if len(line) > 0 && req.Method == "ping" && (how == "deaf" || how == "deafgarbage") {
				continue // deaf to ping too, before initialize and after
			}
			if len(line) > 0 {
				if _, werr := pw.Write(line); werr != nil {
					return
				}
			}
			if err != nil {
				pw.CloseWithError(err)
				return
			}
		}
	}()
	return pr
}

// fixtureVersions is the protocol versions of the fixture server: both eras
// unless UPSTREAM_TEST_FIXTURE says modern or legacy (the d-* modes are
// legacy servers with a misbehaving server/discover).
func fixtureVersions() []string {
	mode := os.Getenv(envMode)
	switch {
	case mode == "modern" || mode == "d-slowmodern":
		return []string{ModernVersion}
	case mode == "legacy" || (strings.HasPrefix(mode, "d-") && mode != "d-chatty"):
		return []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}
	}
	return nil
}

// newFixtureServer serves the test tools; remote tests serve it over HTTP.
func newFixtureServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "fixture", Version: "1.0.0"}, &mcp.ServerOptions{SupportedProtocolVersions: fixtureVersions()})
	if m := os.Getenv(envMode); m == "modern" || m == "d-slowmodern" {
		s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
			return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
				if method == "initialize" {
					return nil, &jsonrpc.Error{Code: mcp.CodeUnsupportedProtocolVersion, Message: "modern only"}
				}
				if method == "ping" || method == "logging/setLevel" {
					writeEvent("removed " + method)
					return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: method + " was removed"}
				}
				return next(ctx, method, req)
			}
		})
	}
	obj := map[string]any{"type": "object"}
	text := func(s string) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
	}
	// echo returns the raw arguments it received, or <absent>.
	s.AddTool(&mcp.Tool{Name: "echo", InputSchema: obj}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if len(req.Params.Arguments) == 0 {
			return text("<absent>"), nil
		}
		return text(string(req.Params.Arguments)), nil
	})
	// sleep waits until cancelled and records both events.
	s.AddTool(&mcp.Tool{Name: "sleep", InputSchema: obj}, func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		writeEvent("started")
		<-ctx.Done()
		writeEvent("cancelled")
		return nil, ctx.Err()
	})
	// big returns n bytes of text.
	s.AddTool(&mcp.Tool{Name: "big", InputSchema: obj}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var args struct{ N int }
		if err := json.Unmarshal(req.Params.Arguments, &args); err != nil {
			return nil, err
		}
		return text(strings.Repeat("x", args.N)), nil
	})
	// die exits in the middle of the call.
	s.AddTool(&mcp.Tool{Name: "die", InputSchema: obj}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		fmt.Fprintln(os.Stderr, "dying now")
		os.Exit(7)
		return nil, nil
	})
	// ask asks for input (MRTR) until it gets it.
	s.AddTool(&mcp.Tool{Name: "ask", InputSchema: obj}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if len(req.Params.InputResponses) > 0 {
			return text("answered"), nil
		}
		return &mcp.CallToolResult{
			InputRequests: mcp.InputRequestMap{"q": &mcp.ElicitParams{Message: "name?", RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"n": map[string]any{"type": "string"}}}}},
			RequestState:  "state-1",
		}, nil
	})
	// fail answers with a JSON-RPC error that carries data.
	s.AddTool(&mcp.Tool{Name: "fail", InputSchema: obj}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return nil, &jsonrpc.Error{Code: -32042, Message: "custom failure", Data: json.RawMessage(`{"x":1}`)}
	})
	return s
}

// writeEvent appends a line to the file named by UPSTREAM_TEST_FILE.
func writeEvent(line string) {
	name := os.Getenv(envFile)
	if name == "" {
		return
	}
	f, err := os.OpenFile(name, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	if _, err := fmt.Fprintln(f, line); err != nil {
		log.Fatal(err)
	}
}

// noisyWriter writes a junk line before every frame.
type noisyWriter struct {
	w io.Writer
	n int
}

var junk = []string{
	"plain text log line",
	"",
	"   \t ",
	`{"level":"info","msg":"a JSON log line, not JSON-RPC"}`,
	"[INFO] bracketed log line",
	`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}`,
	`[1,2,3]`,
	`{"broken json`,
}

func (w *noisyWriter) Write(p []byte) (int, error) {
	if _, err := io.WriteString(w.w, junk[w.n%len(junk)]+"\n"); err != nil {
		return 0, err
	}
	w.n++
	return w.w.Write(p)
}

func (w *noisyWriter) Close() error { return nil }
