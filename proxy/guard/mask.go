package guard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// This file masks the config's secrets (Options.Redactor's known values) in
// what an upstream sends that reaches a client: a server given a token in
// its env or headers may echo it in a tool result, an error, a resource, a
// prompt, a log message, a progress message or a request of its own. Only
// known values are masked; credential shapes are content (README
// "Secrets").
//
// Where it happens: tools/call results on the lean path, first of all
// (settle in proxy/call.go: before spend counting and labels, so that neither sees
// a secret), and again where any call ends (MaskingFinish, for what does not
// pass settle: errors, a bridged call's input requests); every other result
// and error of a request (MaskingMiddleware); every notification and request
// the proxy sends a client (MaskingSender). The lean path checks the raw
// bytes for any spelling of any secret and decodes only when one is there
// (redact.Redactor.JSON; BenchmarkJSON in internal/redact measures it).

// Mask masks the known secrets in a raw JSON value from an upstream.
func (g *Guard) Mask(raw json.RawMessage) json.RawMessage {
	return g.red.JSON(raw)
}

// MaskErr masks the known secrets in an error that goes to a client: the
// message and data of a JSON-RPC error (an upstream's, kept with its code),
// or the message of any other.
func (g *Guard) MaskErr(err error) error {
	if err == nil || !g.red.Knows() {
		return err
	}
	var rpcErr *jsonrpc.Error
	if errors.As(err, &rpcErr) {
		msg, data := g.red.Known(rpcErr.Message), g.Mask(rpcErr.Data)
		if msg == rpcErr.Message && len(data) == len(rpcErr.Data) && (len(data) == 0 || &data[0] == &rpcErr.Data[0]) {
			return err
		}
		return &jsonrpc.Error{Code: rpcErr.Code, Message: msg, Data: data}
	}
	return g.red.KnownError(err)
}

// MaskingFinish returns finish with the known secrets masked in the result
// or error it is given. masked, if not nil, says that the result was masked
// already (by settle) and needs no second look.
func (g *Guard) MaskingFinish(finish func(json.RawMessage, error), masked func() bool) func(json.RawMessage, error) {
	return func(raw json.RawMessage, err error) {
		if masked == nil || !masked() {
			raw = g.Mask(raw)
		}
		finish(raw, g.MaskErr(err))
	}
}

// MaskingMiddleware masks the known secrets in the result and error of every
// request a client sends, but tools/call's result, which the call path
// masked on its raw bytes.
func (g *Guard) MaskingMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if !g.red.Knows() {
			return res, err
		}
		if err != nil {
			return res, g.MaskErr(err)
		}
		if res == nil || method == "tools/call" {
			return res, nil
		}
		masked, err := maskValue(g, res)
		if err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("the %s result held a secret of the config and could not be masked, so it was withheld: %v", method, err)}
		}
		return masked, nil
	}
}

// MaskingSender masks the known secrets in the params of every notification
// and request the proxy sends a client (relayed log messages, progress,
// sampling and elicitation). The params are masked in place: they are the
// proxy's own copy of what an upstream sent.
func (g *Guard) MaskingSender(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if g.red.Knows() {
			if p := req.GetParams(); p != nil && !reflect.ValueOf(p).IsNil() {
				if err := maskInPlace(g, p); err != nil {
					return nil, fmt.Errorf("%s: the message held a secret of the config and could not be masked, so it was not sent: %w", method, err)
				}
			}
		}
		return next(ctx, method, req)
	}
}

// maskValue returns v, a pointer to a result, or a copy of it with the known
// secrets masked when it holds any.
func maskValue[T any](g *Guard, v T) (T, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return v, nil // not the proxy's to encode: the SDK will say so
	}
	masked := g.Mask(raw)
	if len(masked) == len(raw) && &masked[0] == &raw[0] {
		return v, nil
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer {
		return v, errors.New("not a pointer")
	}
	out := reflect.New(rv.Type().Elem())
	if err := json.Unmarshal(masked, out.Interface()); err != nil {
		return v, err
	}
	return out.Interface().(T), nil
}

// maskInPlace masks the known secrets in *p, p a pointer to params.
func maskInPlace(g *Guard, p mcp.Params) error {
	masked, err := maskValue(g, p)
	if err != nil || masked == p {
		return err
	}
	reflect.ValueOf(p).Elem().Set(reflect.ValueOf(masked).Elem())
	return nil
}
