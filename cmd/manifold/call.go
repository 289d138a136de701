package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manifold-mcp/manifold/proxy"
)

func cmdCall(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	var c common
	fs := newFlags("call", "call [--config FILE] [--json] NAME [JSON-ARGUMENTS]", levelOneShot, stderr, &c)
	asJSON := fs.Bool("json", false, "print the whole result as JSON")
	pos, ok, err := parse(fs, args)
	if !ok {
		return err
	}
	switch {
	case len(pos) == 0:
		return argError("call", "no tool name; write manifold call NAME '{\"key\":\"value\"}' (run manifold tools for the names)")
	case len(pos) > 2:
		return argError("call", "%d arguments %q; want the tool name and at most one JSON object of arguments (quote it: '{\"a\":1}')", len(pos), pos)
	}
	name := pos[0]
	var arguments json.RawMessage
	if len(pos) == 2 {
		arguments = json.RawMessage(pos[1])
		var obj map[string]any
		if err := json.Unmarshal(arguments, &obj); err != nil {
			return usageError("call: arguments must be a JSON object, e.g. '{\"path\":\"README.md\"}': %v", err)
		}
	}
	c.oneShot, c.only, c.interactive = true, name, true
	p, err := startReady(ctx, c, stderr)
	if err != nil {
		return err
	}
	defer p.Close()

	// The call travels the same path a client's does: an MCP client talks to
	// the proxy's stdio server over a pair of pipes.
	cr, pw := io.Pipe()
	pr, cw := io.Pipe()
	serveDone := make(chan error, 1)
	go func() {
		serveDone <- p.ServeStdio(ctx, pr, pw)
		pw.Close()
	}()
	client := mcp.NewClient(&mcp.Implementation{Name: "manifold-call", Version: version()}, nil)
	cs, err := client.Connect(ctx, &mcp.IOTransport{Reader: cr, Writer: cw}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		return fmt.Errorf("connect to the proxy: %w", err)
	}
	params := &mcp.CallToolParams{Name: name}
	if arguments != nil {
		params.Arguments = arguments
	}
	res, err := cs.CallTool(ctx, params)
	if err == nil { // printed at once, before anything stops
		if *asJSON {
			b, merr := json.MarshalIndent(res, "", "  ")
			if merr != nil {
				return merr
			}
			fmt.Fprintln(stdout, string(b))
		} else {
			printResult(stdout, res)
		}
	}
	_ = cs.Close()
	<-serveDone
	if err != nil {
		for _, st := range p.Status() {
			if st.State == proxy.StateMisconfigured && strings.HasPrefix(name, st.Name+"__") {
				err = fmt.Errorf("%w (server %s is left out: %s)", err, st.Name, st.Err)
			}
		}
		return p.Redactor().Error(fmt.Errorf("call %q: %w", name, err))
	}
	if res.IsError {
		return exitError{code: 1, msg: fmt.Sprintf("tool %q returned an error", name)}
	}
	return nil
}

func printResult(w io.Writer, res *mcp.CallToolResult) {
	for _, ct := range res.Content {
		switch ct := ct.(type) {
		case *mcp.TextContent:
			fmt.Fprintln(w, ct.Text)
		case *mcp.ResourceLink:
			fmt.Fprintf(w, "[resource link] %s %s\n", ct.URI, ct.Name)
		case *mcp.EmbeddedResource:
			if ct.Resource != nil {
				fmt.Fprintf(w, "[resource] %s\n%s\n", ct.Resource.URI, ct.Resource.Text)
			}
		case *mcp.ImageContent:
			fmt.Fprintf(w, "[image %s, %d bytes]\n", ct.MIMEType, len(ct.Data))
		case *mcp.AudioContent:
			fmt.Fprintf(w, "[audio %s, %d bytes]\n", ct.MIMEType, len(ct.Data))
		default:
			b, _ := json.Marshal(ct)
			fmt.Fprintln(w, string(b))
		}
	}
	if res.StructuredContent != nil && len(res.Content) == 0 {
		b, _ := json.MarshalIndent(res.StructuredContent, "", "  ")
		fmt.Fprintln(w, string(b))
	}
}
