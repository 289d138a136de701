// Command testplugin is the plugin the plugins tests build and start: the
// tools of plugins/internal/testtools, served with plugins/sdk.
//
// TESTPLUGIN_CONTRACT=N makes it announce contract version N instead, to
// test the host's version check; TESTPLUGIN_BAD_TOOL=1 adds a tool whose
// input schema is not an object schema, which the host must leave out.
package main

import (
	"encoding/json"
	"os"
	"strconv"

	"github.com/hashicorp/go-plugin"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manifold-mcp/manifold/plugins"
	"github.com/manifold-mcp/manifold/plugins/internal/testtools"
	"github.com/manifold-mcp/manifold/plugins/sdk"
)

func main() {
	p := sdk.New()
	testtools.Register(p)
	if os.Getenv("TESTPLUGIN_BAD_TOOL") == "1" {
		p.AddTool(&mcp.Tool{Name: "bad", InputSchema: json.RawMessage(`{"type":"string"}`)}, nil)
	}
	if v, err := strconv.Atoi(os.Getenv("TESTPLUGIN_CONTRACT")); err == nil {
		hs := plugins.Handshake
		hs.ProtocolVersion = uint(v)
		plugin.Serve(&plugin.ServeConfig{
			HandshakeConfig:  hs,
			VersionedPlugins: map[int]plugin.PluginSet{v: {plugins.PluginName: &plugins.GRPCPlugin{Impl: p}}},
			GRPCServer:       plugin.DefaultGRPCServer,
		})
		return
	}
	p.Serve()
}
