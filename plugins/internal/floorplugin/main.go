// Command floorplugin is the least a go-plugin gRPC plugin can be, for
// the benchmarks' floor: go-plugin's default server, no troupe sdk, and
// one unary RPC (the Plugin service's CallTool) that does no work. It
// answers each call with its request's name as text, so that the caller
// chooses the size of both the request and the reply.
package main

import (
	"context"
	"errors"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	pluginv1 "github.com/troupe-dev/troupe/sdk/wire/proto/troupe/plugin/v1"
)

// Handshake is the floor plugin's own: it is not a troupe plugin.
var Handshake = plugin.HandshakeConfig{
	ProtocolVersion:  1,
	MagicCookieKey:   "FLOOR_PLUGIN",
	MagicCookieValue: "floor",
}

type floor struct {
	pluginv1.UnimplementedPluginServer
}

func (floor) CallTool(_ context.Context, req *pluginv1.CallToolRequest) (*pluginv1.CallToolResponse, error) {
	return &pluginv1.CallToolResponse{Text: req.GetName()}, nil
}

// grpcPlugin serves floor.
type grpcPlugin struct{ plugin.NetRPCUnsupportedPlugin }

func (grpcPlugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	pluginv1.RegisterPluginServer(s, floor{})
	return nil
}

func (grpcPlugin) GRPCClient(context.Context, *plugin.GRPCBroker, *grpc.ClientConn) (any, error) {
	return nil, errors.New("the floor plugin has no client side")
}

func main() {
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: Handshake,
		Plugins:         plugin.PluginSet{"floor": grpcPlugin{}},
		GRPCServer:      plugin.DefaultGRPCServer,
	})
}
