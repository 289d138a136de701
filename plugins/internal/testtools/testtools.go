// Package testtools is the set of tools of plugins/internal/testplugin, the
// plugin the plugins tests start. Each tool exercises one part of the
// contract: typed and raw tools, content kinds, errors, cancellation, crashes,
// and what the plugin process can see of its host (stdin, environment).
//
// It is for tests only: some tools crash the process or print junk on
// purpose.
package testtools

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manifold-mcp/manifold/plugins/sdk"
)

// Reverse returns s with its runes in reverse order. It is the function the
// benchmark calls directly and through a plugin.
func Reverse(s string) string {
	r := make([]rune, 0, utf8.RuneCountInString(s))
	for _, c := range s {
		r = append(r, c)
	}
	slices.Reverse(r)
	return string(r)
}

// ReverseIn and ReverseOut are the reverse tool's arguments and result.
type ReverseIn struct {
	Text string `json:"text" jsonschema:"the text to reverse"`
}

type ReverseOut struct {
	Text string `json:"text"`
}

// PNG is a 1x1 transparent PNG, the image tool's content.
var PNG = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89\x00\x00\x00\rIDATx\x9cc\xf8\x0f\x00\x00\x01\x01\x00\x05\x18\xd8N\x00\x00\x00\x00IEND\xaeB`\x82")

// Register adds the test tools to p.
func Register(p *sdk.Plugin) {
	sdk.AddTool(p, &mcp.Tool{
		Name:        "reverse",
		Title:       "Reverse",
		Description: "Reverse a text.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
	}, func(_ context.Context, in ReverseIn) (*mcp.CallToolResult, ReverseOut, error) {
		return nil, ReverseOut{Text: Reverse(in.Text)}, nil
	})

	p.AddTool(&mcp.Tool{
		Name:        "raw_echo",
		Description: "Echo the raw arguments (its schema has no type: the host adds it).",
		InputSchema: json.RawMessage(`{"properties":{"x":{}}}`),
	}, func(_ context.Context, args json.RawMessage) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(args)}}}, nil
	})

	sdk.AddTool(p, &mcp.Tool{Name: "pid", Description: "The plugin's process id."},
		func(context.Context, struct{}) (*mcp.CallToolResult, struct {
			PID int `json:"pid"`
		}, error) {
			return nil, struct {
				PID int `json:"pid"`
			}{os.Getpid()}, nil
		})

	type sleepIn struct {
		Seconds float64 `json:"seconds"`
		// Started, if set, is a file written when the sleep starts.
		Started string `json:"started,omitempty"`
		// Cancelled, if set, is a file written when the sleep is cancelled.
		Cancelled string `json:"cancelled,omitempty"`
	}
	sdk.AddTool(p, &mcp.Tool{Name: "sleep", Description: "Sleep, or until the call is cancelled."},
		func(ctx context.Context, in sleepIn) (*mcp.CallToolResult, any, error) {
			if in.Started != "" {
				_ = os.WriteFile(in.Started, []byte("started"), 0o600)
			}
			select {
			case <-time.After(time.Duration(in.Seconds * float64(time.Second))):
				return text("slept"), nil, nil
			case <-ctx.Done():
				if in.Cancelled != "" {
					_ = os.WriteFile(in.Cancelled, []byte("cancelled"), 0o600)
				}
				return nil, nil, ctx.Err()
			}
		})

	sdk.AddTool(p, &mcp.Tool{Name: "stdin", Description: "Read stdin for up to a second and say what came."},
		func(context.Context, struct{}) (*mcp.CallToolResult, any, error) {
			type read struct {
				n   int
				err error
			}
			done := make(chan read, 1)
			go func() {
				n, err := io.Copy(io.Discard, io.LimitReader(os.Stdin, 1<<20))
				done <- read{int(n), err}
			}()
			select {
			case r := <-done:
				if r.err != nil {
					return text(fmt.Sprintf("error after %d bytes: %v", r.n, r.err)), nil, nil
				}
				return text(fmt.Sprintf("eof after %d bytes", r.n)), nil, nil
			case <-time.After(time.Second):
				return text("open: no end of input within 1s"), nil, nil
			}
		})

	sdk.AddTool(p, &mcp.Tool{Name: "env", Description: "The plugin's environment variable names."},
		func(context.Context, struct{}) (*mcp.CallToolResult, any, error) {
			var names []string
			for _, kv := range os.Environ() {
				k, _, _ := strings.Cut(kv, "=")
				names = append(names, k)
			}
			slices.Sort(names)
			return text(strings.Join(names, " ")), nil, nil
		})

	sdk.AddTool(p, &mcp.Tool{Name: "getenv", Description: "The value of one environment variable."},
		func(_ context.Context, in struct {
			Name string `json:"name"`
		}) (*mcp.CallToolResult, any, error) {
			return text(os.Getenv(in.Name)), nil, nil
		})

	sdk.AddTool(p, &mcp.Tool{Name: "noise", Description: "Print to stdout and stderr, and log."},
		func(context.Context, struct{}) (*mcp.CallToolResult, any, error) {
			fmt.Println("noise on stdout")
			fmt.Fprintln(os.Stderr, "noise on stderr")
			p.Logger().Info("noise in the log", "n", 1)
			return text("made noise"), nil, nil
		})

	p.AddTool(&mcp.Tool{Name: "image", Description: "An image, a text and structured content."},
		func(context.Context, json.RawMessage) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{
				Content: []mcp.Content{
					&mcp.TextContent{Text: "a pixel"},
					&mcp.ImageContent{Data: PNG, MIMEType: "image/png"},
				},
				StructuredContent: map[string]any{"width": 1, "height": 1},
			}, nil
		})

	p.AddTool(&mcp.Tool{Name: "fail", Description: "Fail with an error the model sees."},
		func(context.Context, json.RawMessage) (*mcp.CallToolResult, error) {
			return nil, fmt.Errorf("this tool always fails")
		})

	p.AddTool(&mcp.Tool{Name: "panic", Description: "Panic."},
		func(context.Context, json.RawMessage) (*mcp.CallToolResult, error) {
			panic("deliberate")
		})

	p.AddTool(&mcp.Tool{Name: "crash", Description: "Crash the plugin process mid-call, as a panic outside a handler does."},
		func(ctx context.Context, _ json.RawMessage) (*mcp.CallToolResult, error) {
			go func() { panic("deliberate crash") }()
			<-ctx.Done()
			return nil, ctx.Err()
		})
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}
