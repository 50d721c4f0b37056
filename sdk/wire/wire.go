package wire

import (
	"context"
	"errors"
	"fmt"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	pluginv1 "github.com/troupe-dev/troupe/sdk/wire/proto/troupe/plugin/v1"
)

// Version is the version of the plugin protocol this build speaks. The
// host and the plugin agree on it in go-plugin's handshake when the
// plugin starts, and the plugin says it again in Describe.
const Version = 1

// PluginName is the name of the one plugin in the plugin set.
const PluginName = "troupe"

// Handshake is the go-plugin handshake. The magic cookie tells a plugin
// binary that troupe started it; it is not a secret.
var Handshake = plugin.HandshakeConfig{
	ProtocolVersion:  Version,
	MagicCookieKey:   "TROUPE_PLUGIN_MAGIC_COOKIE",
	MagicCookieValue: "b5a1d4c2-troupe-plugin-protocol",
}

// Environment the host sets for a plugin.
const (
	// EnvHostPID is the host's process ID. When it is set, the plugin
	// exits once its parent changes: the host (or the keeper the host
	// started it under, which dies with the host) is gone.
	EnvHostPID = "TROUPE_PLUGIN_HOST_PID"
	// EnvCancelGrace is how long a call may run on after it was cancelled
	// before the plugin gives up on it and exits, as a Go duration.
	EnvCancelGrace = "TROUPE_PLUGIN_CANCEL_GRACE"
	// EnvLaneFD is the descriptor of the plugin's end of its lane (see
	// NewLane), when the host passed one. A plugin that serves the lane
	// says so in Describe.
	EnvLaneFD = "TROUPE_PLUGIN_LANE_FD"
)

// LaneVersion is the version of the lane (see NewLane) this build
// speaks; a plugin says in Describe which it serves.
const LaneVersion = 1

// ErrLaneBusy is the error of a call on a lane (see NewLane) that was
// not sent, because the other side is not reading the lane's control
// socket; its gRPC code is Unavailable. The call may be made over gRPC
// instead.
var ErrLaneBusy = errors.New("lane: the other side is not reading its lane; the call was not sent")

// MaxMessageSize bounds every gRPC message either side reads.
const MaxMessageSize = 8 << 20

// windowSize is the HTTP/2 flow-control window of both sides. A fixed
// window turns off gRPC's bandwidth probing, whose pings cost a local
// connection more than they gain.
const windowSize = 4 << 20

// ServerOptions are the gRPC server options of both sides.
func ServerOptions(opts []grpc.ServerOption) []grpc.ServerOption {
	return append(opts, grpc.MaxRecvMsgSize(MaxMessageSize), grpc.MaxSendMsgSize(MaxMessageSize),
		grpc.InitialWindowSize(windowSize), grpc.InitialConnWindowSize(windowSize))
}

// DialOptions are the gRPC dial options of both sides.
func DialOptions() []grpc.DialOption {
	return []grpc.DialOption{
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(MaxMessageSize), grpc.MaxCallSendMsgSize(MaxMessageSize)),
		grpc.WithInitialWindowSize(windowSize), grpc.WithInitialConnWindowSize(windowSize),
	}
}

// Conn is the host's side of a started plugin: its Plugin client and the
// broker through which the host serves Host to the plugin's loops.
type Conn struct {
	Plugin pluginv1.PluginClient
	Broker *plugin.GRPCBroker
}

// Plugin is the go-plugin plugin of the protocol. A plugin process sets
// Serve; the host leaves it nil and gets a *Conn from Dispense.
type Plugin struct {
	plugin.NetRPCUnsupportedPlugin
	// Serve returns the Plugin service, given the broker to reach the
	// host's Host service through.
	Serve func(broker *plugin.GRPCBroker) pluginv1.PluginServer
}

var _ plugin.GRPCPlugin = (*Plugin)(nil)

// GRPCServer registers the Plugin service.
func (p *Plugin) GRPCServer(broker *plugin.GRPCBroker, s *grpc.Server) error {
	if p.Serve == nil {
		return errors.New("troupe plugin: no server")
	}
	pluginv1.RegisterPluginServer(s, p.Serve(broker))
	return nil
}

// GRPCClient returns a *Conn.
func (p *Plugin) GRPCClient(_ context.Context, broker *plugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return &Conn{Plugin: pluginv1.NewPluginClient(c), Broker: broker}, nil
}

// PluginSets are the plugin sets by protocol version, for go-plugin's
// VersionedPlugins on both sides.
func PluginSets(p *Plugin) map[int]plugin.PluginSet {
	return map[int]plugin.PluginSet{Version: {PluginName: p}}
}

// Check reports what a Describe answer gets wrong: a protocol version
// other than want, or more than the limits allow.
func Check(d *pluginv1.DescribeResponse, want int) error {
	if int(d.GetProtocolVersion()) != want {
		return fmt.Errorf("plugin speaks protocol version %d, troupe speaks %d; rebuild the plugin against this troupe's sdk", d.GetProtocolVersion(), want)
	}
	if len(d.GetTypes()) > MaxTypes || len(d.GetTools()) > MaxTools {
		return fmt.Errorf("plugin offers %d types and %d tools; at most %d and %d are read", len(d.GetTypes()), len(d.GetTools()), MaxTypes, MaxTools)
	}
	return nil
}

// Limits of a description.
const (
	MaxTypes = 256
	MaxTools = 256
)
