package frame

import (
	"encoding/json"
	"fmt"

	"github.com/manifold-mcp/manifold/proxy/internal/wire"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// Check classifies one line read from the downstream client
// (wire.Check); a response the SDK cannot decode is dropped too, since the
// SDK would end the session on it.
func Check(line []byte) wire.Frame {
	f := wire.Check(line)
	if f.Kind == wire.Response {
		if _, err := jsonrpc.DecodeMessage(f.Msg); err != nil {
			return f.Drop("a response that cannot be decoded: " + err.Error())
		}
	}
	return f
}

// Response is the JSON-RPC response to id: result, or rpcErr; the
// lean paths answer with it (stdio adds the newline).
func Response(id []byte, result json.RawMessage, rpcErr *jsonrpc.Error) []byte {
	if rpcErr != nil {
		b, err := json.Marshal(struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Error   *jsonrpc.Error  `json:"error"`
		}{"2.0", id, rpcErr})
		if err != nil {
			b = fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"error":{"code":%d,"message":"internal error"}}`, id, jsonrpc.CodeInternalError)
		}
		return b
	}
	return wire.AppendResponse(make([]byte, 0, len(result)+len(id)+40), id, result)
}
