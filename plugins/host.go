package plugins

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"github.com/hashicorp/go-plugin/runner"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// defaultStartTimeout bounds a start when Dial's ctx has no deadline.
const defaultStartTimeout = 30 * time.Second

// Options describes one plugin.
type Options struct {
	// Name is the plugin's key in the config; it tags logs and errors and is
	// the name of the MCP server that presents the plugin's tools.
	Name string

	// Command is the plugin executable: a path, or a name looked up in the
	// proxy's PATH when Dial runs. A relative path is relative to the
	// proxy's working directory.
	Command string
	// Args are the plugin's arguments. If nil, none.
	Args []string
	// Env is the plugin's whole environment, as KEY=VALUE entries, besides
	// the variables of go-plugin's handshake: the proxy's own environment is
	// not inherited. If nil, the plugin gets no other variable.
	Env []string
	// Dir is the plugin's working directory. If empty, the proxy's.
	Dir string

	// SHA256 is the expected SHA-256 of the executable in hex, checked
	// before every start; a plugin whose file does not match is not
	// started. If empty, the file is not checked.
	SHA256 string

	// Logger receives the plugin's log lines, whatever it prints to stdout
	// or stderr, and lifecycle events, tagged plugin=<Name>. If nil, logs
	// are discarded.
	Logger *slog.Logger
}

// Host starts one plugin on demand and presents its tools as an MCP server.
// Its methods are safe for concurrent use.
type Host struct {
	opts Options
	log  *slog.Logger
}

// NewHost returns a Host for the plugin opts describes. It starts nothing.
func NewHost(opts Options) *Host {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Host{opts: opts, log: log.With("plugin", opts.Name)}
}

// Dial starts the plugin and returns the client end of an in-memory MCP
// connection to a server that lists the plugin's tools and forwards their
// calls to it. It has the signature of upstream.Options.Dial.
//
// The plugin process belongs to that connection: when the connection is
// closed, the plugin is stopped (and Close returns once it is gone); when the
// plugin exits, the connection is closed, and a call that was running
// returns an isError result. The caller must connect the transport, and
// close the connection when done. Each call of Dial starts a new process.
//
// ctx bounds the start: the handshake and the listing of the tools. Errors
// name the plugin, say what went wrong and carry the tail of the plugin's
// stderr; a plugin that failed to start has been killed by then.
func (h *Host) Dial(ctx context.Context) (mcp.Transport, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("plugin %q: %w", h.opts.Name, err)
	}
	path, err := h.executable()
	if err != nil {
		return nil, err
	}
	if h.opts.SHA256 != "" {
		if err := h.checkSum(path); err != nil {
			return nil, err
		}
	}

	startTimeout := defaultStartTimeout
	if dl, ok := ctx.Deadline(); ok {
		startTimeout = max(time.Until(dl), time.Millisecond)
	}
	var (
		r        *procRunner
		stopKill = func() bool { return false }
	)
	client := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  Handshake,
		VersionedPlugins: map[int]plugin.PluginSet{ContractVersion: {PluginName: &GRPCPlugin{}}},
		RunnerFunc: func(_ hclog.Logger, spec *exec.Cmd, _ string) (runner.Runner, error) {
			var err error
			r, err = newProcRunner(path, h.opts.Args, h.opts.Env, spec.Env, h.opts.Dir)
			if err != nil {
				return nil, err
			}
			// A cancelled start kills the process, so the handshake ends at once.
			stopKill = context.AfterFunc(ctx, func() { _ = r.Kill(context.Background()) })
			return r, nil
		},
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		AutoMTLS:         true,
		StartTimeout:     startTimeout,
		SkipHostEnv:      true,
		Logger:           newHCLogger(h.log),
		SyncStdout:       &lineLogger{log: h.log, level: slog.LevelInfo, stream: "stdout"},
		SyncStderr:       &lineLogger{log: h.log, level: slog.LevelWarn, stream: "stderr"},
	})

	fail := func(what string, err error) (mcp.Transport, error) {
		stopKill()
		client.Kill()
		msg := oneLine(err.Error())
		switch {
		case errors.Is(ctx.Err(), context.DeadlineExceeded):
			msg = "did not start within the startup timeout"
		case ctx.Err() != nil:
			msg = "start cancelled"
		}
		var stderr string
		if r != nil {
			stderr = r.tail.String()
		}
		return nil, fmt.Errorf("plugin %q: %s: %s%s", h.opts.Name, what, msg, withTail(stderr))
	}

	rpc, err := client.Client()
	if err != nil {
		if v, ok := pluginVersion(err); ok {
			stopKill()
			client.Kill()
			return nil, fmt.Errorf("plugin %q speaks contract v%d, this manifold speaks v%d: rebuild the plugin against plugins/sdk of this manifold version", h.opts.Name, v, ContractVersion)
		}
		return fail("start "+path, err)
	}
	raw, err := rpc.Dispense(PluginName)
	if err != nil {
		return fail("dispense "+PluginName, err)
	}
	lt, ok := raw.(LocalTools)
	if !ok {
		return fail("dispense "+PluginName, fmt.Errorf("unexpected type %T", raw))
	}
	tools, err := lt.ListTools(ctx)
	if err != nil {
		return fail("list tools", errors.New(status.Convert(err).Message()))
	}
	stopKill()

	srv := h.server(lt, tools, r)
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(context.WithoutCancel(ctx), st, nil)
	if err != nil {
		return fail("serve", err)
	}
	gone := make(chan struct{})
	go h.watch(ss, client, r, gone)
	h.log.Info("plugin started", "pid", r.PID(), "path", path, "tools", len(srv.tools))
	return &transport{Transport: ct, gone: gone, pid: r.PID()}, nil
}

// watch owns the plugin process once it serves: it stops the plugin when the
// session ends, and ends the session when the plugin exits. gone is closed
// once the process is gone.
func (h *Host) watch(ss *mcp.ServerSession, client *plugin.Client, r *procRunner, gone chan<- struct{}) {
	defer close(gone)
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		_ = ss.Wait()
	}()
	select {
	case <-ended:
		h.log.Debug("session ended; stopping plugin", "pid", r.PID())
	case <-r.Exited():
		h.log.Warn("plugin exited unexpectedly; closing its session", "pid", r.PID(), "stderr", r.tail.String())
		_ = ss.Close()
		<-ended
	}
	client.Kill() // asks the plugin to stop, kills it after 2s, waits for it
	h.log.Info("plugin stopped", "pid", r.PID(), "status", r.ExitStatus())
}

// executable finds the plugin's file.
func (h *Host) executable() (string, error) {
	path, err := exec.LookPath(h.opts.Command)
	if err != nil {
		var ee *exec.Error
		if errors.As(err, &ee) {
			err = ee.Err
		}
		return "", fmt.Errorf("plugin %q: %s: %w; build the plugin (see docs/plugins.md) or fix its path in the config", h.opts.Name, h.opts.Command, unwrapPath(err))
	}
	return path, nil
}

// checkSum refuses a file whose SHA-256 is not Options.SHA256.
func (h *Host) checkSum(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("plugin %q: check sha256 of %s: %w", h.opts.Name, path, unwrapPath(err))
	}
	defer f.Close()
	sum := sha256.New()
	if _, err := io.Copy(sum, f); err != nil {
		return fmt.Errorf("plugin %q: check sha256 of %s: %w", h.opts.Name, path, unwrapPath(err))
	}
	got, want := hex.EncodeToString(sum.Sum(nil)), strings.ToLower(h.opts.SHA256)
	if got != want {
		return fmt.Errorf("plugin %q: %s has sha256 %s, but the config expects %s; not starting it: reinstall the plugin, or set sha256 to the new value if you trust this file", h.opts.Name, path, got, want)
	}
	return nil
}

// server builds the MCP server that presents tools and forwards calls to lt.
func (h *Host) server(lt LocalTools, tools []Tool, r *procRunner) *toolServer {
	srv := &toolServer{Server: mcp.NewServer(&mcp.Implementation{Name: h.opts.Name, Version: fmt.Sprintf("plugin contract v%d", ContractVersion)}, &mcp.ServerOptions{
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}},
	})}
	seen := make(map[string]bool, len(tools))
	for _, t := range tools {
		switch {
		case t.Name == "":
			h.log.Error("plugin tool without a name left out")
			continue
		case seen[t.Name]:
			h.log.Error("plugin tool defined twice; the first one is kept", "tool", t.Name)
			continue
		}
		tool, err := mcpTool(t)
		if err == nil {
			err = addTool(srv.Server, tool, h.forward(lt, t.Name, r))
		}
		if err != nil {
			h.log.Error("plugin tool left out", "tool", t.Name, "err", err)
			continue
		}
		seen[t.Name] = true
		srv.tools = append(srv.tools, t.Name)
	}
	return srv
}

type toolServer struct {
	*mcp.Server
	tools []string
}

// addTool adds t, turning the SDK's panics on schemas it refuses into errors.
func addTool(s *mcp.Server, t *mcp.Tool, th mcp.ToolHandler) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%v", p)
		}
	}()
	s.AddTool(t, th)
	return nil
}

// forward returns the handler that runs the tool name in the plugin.
func (h *Host) forward(lt LocalTools, name string, r *procRunner) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var args json.RawMessage
		if req.Params != nil && len(req.Params.Arguments) > 0 {
			args = req.Params.Arguments
		}
		res, err := lt.CallTool(ctx, CallRequest{Name: name, Arguments: args})
		switch {
		case err == nil && res == nil:
			return errorResult("plugin %q: tool %q returned no result", h.opts.Name, name), nil
		case err == nil:
			return res, nil
		case ctx.Err() != nil:
			return nil, ctx.Err()
		}
		st := status.Convert(err)
		select {
		case <-r.Exited():
		default:
			if st.Code() != codes.Unavailable {
				return errorResult("plugin %q: tool %q failed: %s", h.opts.Name, name, st.Message()), nil
			}
		}
		h.log.Warn("plugin stopped during a call", "tool", name, "err", st.Message())
		return errorResult("plugin %q stopped while tool %q was running, so the call may not have completed; it is restarted automatically: retry in a few seconds", h.opts.Name, name), nil
	}
}

func errorResult(format string, args ...any) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf(format, args...)}}}
}

// mcpTool converts a plugin's tool description, normalising its schemas.
func mcpTool(t Tool) (*mcp.Tool, error) {
	in, err := objectSchema(t.InputSchema)
	if err != nil {
		return nil, fmt.Errorf("input schema: %w", err)
	}
	tool := &mcp.Tool{Name: t.Name, Title: t.Title, Description: t.Description, InputSchema: in, Annotations: t.Annotations}
	if len(t.OutputSchema) > 0 && string(t.OutputSchema) != "null" {
		out, err := objectSchema(t.OutputSchema)
		if err != nil {
			return nil, fmt.Errorf("output schema: %w", err)
		}
		tool.OutputSchema = out
	}
	return tool, nil
}

// objectSchema returns schema as a JSON object schema: an absent schema is
// {"type":"object"}, and "type":"object" is added when "type" is missing.
// A schema of another type is an error: MCP tools take and give objects.
func objectSchema(schema json.RawMessage) (json.RawMessage, error) {
	if len(schema) == 0 || string(schema) == "null" {
		return json.RawMessage(`{"type":"object"}`), nil
	}
	var m map[string]any
	if err := json.Unmarshal(schema, &m); err != nil {
		return nil, fmt.Errorf("not a JSON object: %w", err)
	}
	typ, ok := m["type"]
	switch {
	case !ok:
		m["type"] = "object"
		return json.Marshal(m)
	case typ == "object":
		return schema, nil
	default:
		return nil, fmt.Errorf(`type is %v, want "object"`, typ)
	}
}

// versionRE finds the plugin's version in go-plugin's handshake error.
var versionRE = regexp.MustCompile(`Plugin version: (\d+)`)

// pluginVersion returns the contract version a plugin announced, when err is
// go-plugin's version mismatch.
func pluginVersion(err error) (int, bool) {
	m := versionRE.FindStringSubmatch(err.Error())
	if m == nil {
		return 0, false
	}
	var v int
	if _, err := fmt.Sscan(m[1], &v); err != nil {
		return 0, false
	}
	return v, true
}

// transport is the client end of the in-memory connection; closing the
// connection waits until the plugin process is gone.
type transport struct {
	mcp.Transport
	gone <-chan struct{}
	pid  int
}

// PID is the plugin process's pid, which `manifold status` reports.
func (t *transport) PID() int { return t.pid }

func (t *transport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &conn{Connection: c, gone: t.gone}, nil
}

type conn struct {
	mcp.Connection
	gone <-chan struct{}
}

// Close closes the connection, which stops the plugin, and waits for it.
func (c *conn) Close() error {
	err := c.Connection.Close()
	<-c.gone
	return err
}

// oneLine joins the lines of a message.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// withTail formats a stderr tail for an error message.
func withTail(s string) string {
	if s == "" {
		return " (no stderr output)"
	}
	return fmt.Sprintf(" (stderr: %q)", s)
}

// unwrapPath drops the *fs.PathError wrapper, whose path the message
// already names.
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
