package plugins_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manifold-mcp/manifold/plugins"
	"github.com/manifold-mcp/manifold/plugins/internal/testtools"
)

func TestListTools(t *testing.T) {
	h, _ := testHost("t", "TESTPLUGIN_BAD_TOOL=1")
	cs := connect(t, h)
	if got := cs.InitializeResult().ServerInfo.Name; got != "t" {
		t.Errorf("server name = %q, want the plugin's name %q", got, "t")
	}
	res, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*mcp.Tool{}
	var names []string
	for _, tool := range res.Tools {
		byName[tool.Name] = tool
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	// "bad" has a string input schema: the host leaves it out.
	want := []string{"crash", "env", "fail", "getenv", "image", "noise", "panic", "pid", "raw_echo", "reverse", "sleep", "stdin"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}

	schema := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	rev := byName["reverse"]
	if rev == nil {
		t.Fatal("no reverse tool")
	}
	if rev.Title != "Reverse" || rev.Description != "Reverse a text." || rev.Annotations == nil || !rev.Annotations.ReadOnlyHint {
		t.Errorf("reverse = title %q, description %q, annotations %+v; want the plugin's", rev.Title, rev.Description, rev.Annotations)
	}
	wantIn := `{"additionalProperties":false,"properties":{"text":{"description":"the text to reverse","type":"string"}},"required":["text"],"type":"object"}`
	if diff := cmp.Diff(wantIn, schema(rev.InputSchema)); diff != "" {
		t.Errorf("reverse input schema, derived from its Go type (-want +got):\n%s", diff)
	}
	wantOut := `{"additionalProperties":false,"properties":{"text":{"type":"string"}},"required":["text"],"type":"object"}`
	if diff := cmp.Diff(wantOut, schema(rev.OutputSchema)); diff != "" {
		t.Errorf("reverse output schema (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(`{"properties":{"x":{}},"type":"object"}`, schema(byName["raw_echo"].InputSchema)); diff != "" {
		t.Errorf("raw_echo input schema without type gets type object (-want +got):\n%s", diff)
	}
}

func TestCallTool(t *testing.T) {
	h, _ := testHost("t")
	cs := connect(t, h)
	tests := []struct {
		name       string
		tool       string
		args       any
		wantText   string
		wantError  bool
		wantStruct string // JSON; "" for none
	}{
		{
			name: "typed tool gets structured content and JSON text", tool: "reverse", args: map[string]any{"text": "plug-in ✓"},
			wantText: `{"text":"✓ ni-gulp"}`, wantStruct: `{"text":"✓ ni-gulp"}`,
		},
		{
			name: "typed tool validates its arguments", tool: "reverse", args: map[string]any{},
			wantText: `invalid arguments: validating root: required: missing properties: ["text"]`, wantError: true,
		},
		{
			name: "raw tool gets the arguments as sent", tool: "raw_echo", args: json.RawMessage(`{"x":[1,{"y":null}]}`),
			wantText: `{"x":[1,{"y":null}]}`,
		},
		{
			name: "handler error is an isError result", tool: "fail", args: map[string]any{},
			wantText: "this tool always fails", wantError: true,
		},
		{
			name: "panic is an isError result", tool: "panic", args: map[string]any{},
			wantText: `tool "panic" failed: it panicked: deliberate`, wantError: true,
		},
		{
			name: "several content kinds and structured content", tool: "image", args: map[string]any{},
			wantText: "a pixel", wantStruct: `{"height":1,"width":1}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := call(t, cs, tt.tool, tt.args)
			if got := text(res); got != tt.wantText {
				t.Errorf("text = %q, want %q", got, tt.wantText)
			}
			if res.IsError != tt.wantError {
				t.Errorf("IsError = %v, want %v", res.IsError, tt.wantError)
			}
			var gotStruct string
			if res.StructuredContent != nil {
				b, err := json.Marshal(res.StructuredContent)
				if err != nil {
					t.Fatal(err)
				}
				gotStruct = string(b)
			}
			if gotStruct != tt.wantStruct {
				t.Errorf("structured content = %s, want %s", gotStruct, tt.wantStruct)
			}
		})
	}

	res := call(t, cs, "image", map[string]any{})
	var img *mcp.ImageContent
	for _, c := range res.Content {
		if ic, ok := c.(*mcp.ImageContent); ok {
			img = ic
		}
	}
	if img == nil || img.MIMEType != "image/png" || !bytes.Equal(img.Data, testtools.PNG) {
		t.Errorf("image content = %+v, want the plugin's PNG", img)
	}
}

func TestCancellationReachesPlugin(t *testing.T) {
	h, _ := testHost("t")
	cs := connect(t, h)
	dir := t.TempDir()
	started, cancelled := filepath.Join(dir, "started"), filepath.Join(dir, "cancelled")
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "sleep", Arguments: map[string]any{
			"seconds": 600, "started": started, "cancelled": cancelled,
		}})
		errc <- err
	}()
	waitFile(t, started)
	cancel()
	if err := <-errc; err == nil {
		t.Error("cancelled call returned no error")
	}
	waitFile(t, cancelled) // the plugin's ctx was cancelled
	// The connection is still good.
	if got := text(call(t, cs, "reverse", map[string]any{"text": "ab"})); got != `{"text":"ba"}` {
		t.Errorf("call after a cancelled one = %q", got)
	}
}

func TestEnvironmentIsOnlyWhatIsListed(t *testing.T) {
	t.Setenv("MANIFOLD_PLUGINS_TEST_SECRET", "s3cret")
	h, _ := testHost("t", "ONLY=1", "PATH=/nowhere")
	cs := connect(t, h)
	got := strings.Fields(text(call(t, cs, "env", map[string]any{})))
	// The listed variables, and go-plugin's handshake ones.
	want := []string{"MANIFOLD_PLUGIN", "ONLY", "PATH", "PLUGIN_CLIENT_CERT", "PLUGIN_MAX_PORT", "PLUGIN_MIN_PORT", "PLUGIN_PROTOCOL_VERSIONS", "PLUGIN_UNIX_SOCKET_DIR"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("plugin environment (-want +got):\n%s", diff)
	}
	if got := text(call(t, cs, "getenv", map[string]any{"name": "PATH"})); got != "/nowhere" {
		t.Errorf("PATH in the plugin = %q, want the listed /nowhere", got)
	}
}

// TestStdinIsNotShared replaces the process's stdin, which go-plugin would
// hand to the plugin, with a pipe holding data: the plugin must see none.
func TestStdinIsNotShared(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := w.WriteString(`{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n"); err != nil {
		t.Fatal(err)
	}
	defer w.Close() // left open: a plugin that shared it would not see EOF
	saved := os.Stdin
	os.Stdin = r
	h, _ := testHost("t")
	cs := connect(t, h)
	os.Stdin = saved
	if got := text(call(t, cs, "stdin", map[string]any{})); got != "eof after 0 bytes" {
		t.Errorf("plugin read from stdin: %q, want %q", got, "eof after 0 bytes")
	}
	// The pipe still holds what was written.
	w.Close()
	rest, err := io.ReadAll(r)
	if err != nil || !strings.Contains(string(rest), `"method":"ping"`) {
		t.Errorf("the proxy's stdin lost data: %q, %v", rest, err)
	}
}

func TestOutputIsLoggedWithThePluginName(t *testing.T) {
	h, logs := testHost("noisy")
	cs := connect(t, h)
	if got := text(call(t, cs, "noise", map[string]any{})); got != "made noise" {
		t.Fatalf("noise = %q", got)
	}
	// The plugin's stdout and stderr reach the host over go-plugin's gRPC
	// stdio stream, asynchronously: wait (bounded) for both lines while the
	// plugin runs, since what a plugin wrote just before it is stopped may
	// be cut off with its stream.
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if s := logs.String(); strings.Contains(s, "noise on stdout") && strings.Contains(s, "noise on stderr") {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = cs.Close()
	out := logs.String()
	for _, want := range []string{
		`plugin=noisy`,
		`stream=stdout line="noise on stdout"`,
		`stream=stderr line="noise on stderr"`,
		`msg="noise in the log"`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if !strings.Contains(line, "plugin=noisy") {
			t.Errorf("log line without the plugin's name: %s", line)
		}
	}
}

func TestSHA256(t *testing.T) {
	data, err := os.ReadFile(testPlugin)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	actual := hex.EncodeToString(sum[:])
	wrong := strings.Repeat("0", 64)

	h := plugins.NewHost(plugins.Options{Name: "t", Command: testPlugin, SHA256: wrong})
	_, err = h.Dial(t.Context())
	want := `plugin "t": ` + testPlugin + ` has sha256 ` + actual + `, but the config expects ` + wrong + `; not starting it: reinstall the plugin, or set sha256 to the new value if you trust this file`
	if err == nil || err.Error() != want {
		t.Errorf("Dial with a wrong sha256: err = %v\nwant %s", err, want)
	}

	for _, s := range []string{actual, strings.ToUpper(actual)} {
		h := plugins.NewHost(plugins.Options{Name: "t", Command: testPlugin, SHA256: s})
		cs := connect(t, h)
		if got := text(call(t, cs, "reverse", map[string]any{"text": "ok"})); got != `{"text":"ko"}` {
			t.Errorf("plugin with the right sha256: reverse = %q", got)
		}
	}
}

func TestDialErrors(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing")
	tests := []struct {
		name    string
		opts    plugins.Options
		timeout time.Duration
		want    []string // substrings of the error
	}{
		{
			name: "contract version mismatch",
			opts: plugins.Options{Name: "old", Command: testPlugin, Env: []string{"TESTPLUGIN_CONTRACT=2"}},
			want: []string{`plugin "old" speaks contract v2, this manifold speaks v1: rebuild the plugin against plugins/sdk of this manifold version`},
		},
		{
			name: "missing file",
			opts: plugins.Options{Name: "gone", Command: missing},
			want: []string{`plugin "gone": ` + missing + `: no such file or directory; build the plugin`},
		},
		{
			name: "not a plugin",
			opts: plugins.Options{Name: "echo", Command: "/bin/echo", Args: []string{"hello"}},
			want: []string{`plugin "echo": start /bin/echo: `, "hello", "not a Manifold plugin"},
		},
		{
			name: "plugin that exits before the handshake shows its stderr",
			opts: plugins.Options{Name: "sh", Command: "/bin/sh", Args: []string{"-c", "echo config is broken >&2; exit 3"}},
			want: []string{`plugin "sh": start /bin/sh: `, `(stderr: "config is broken")`},
		},
		{
			name:    "no handshake within the startup timeout",
			opts:    plugins.Options{Name: "slow", Command: "/bin/sleep", Args: []string{"600"}},
			timeout: 300 * time.Millisecond,
			want:    []string{`plugin "slow": start /bin/sleep: did not start within the startup timeout`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := t.Context()
			if tt.timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tt.timeout)
				defer cancel()
			}
			tr, err := plugins.NewHost(tt.opts).Dial(ctx)
			if err == nil {
				t.Fatalf("Dial = %v, nil; want an error", tr)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Dial error = %q\nwant it to contain %q", err, w)
				}
			}
		})
	}
}
