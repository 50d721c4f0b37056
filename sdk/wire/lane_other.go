//go:build !unix

package wire

import (
	"context"
	"errors"
	"os"

	pluginv1 "github.com/troupe-dev/troupe/sdk/wire/proto/troupe/plugin/v1"
)

// errNoLane: the lane needs Unix sockets; every call goes over gRPC.
var errNoLane = errors.New("lane: not on this system")

// Lane is the host's end of a plugin's lane; on this system there is none.
type Lane struct{}

// NewLane fails on this system: calls go over gRPC.
func NewLane() (*Lane, *os.File, error) { return nil, nil, errNoLane }

// CallTool fails: there is no lane on this system.
func (*Lane) CallTool(context.Context, *pluginv1.CallToolRequest) (*pluginv1.CallToolResponse, error) {
	return nil, errNoLane
}

// CarryTrace does nothing: there is no lane on this system.
func (*Lane) CarryTrace() {}

// ServeHost does nothing: there is no lane on this system.
func (*Lane) ServeHost(pluginv1.HostServer) {}

// Close does nothing.
func (*Lane) Close() error { return nil }

// LaneServer is a plugin's end of its lane; on this system there is none.
type LaneServer struct{}

// LaneFromEnv returns nil: on this system a plugin serves no lane.
func LaneFromEnv() (*LaneServer, error) {
	if _, ok := os.LookupEnv(EnvLaneFD); ok {
		_ = os.Unsetenv(EnvLaneFD)
		return nil, errNoLane
	}
	return nil, nil
}

// Host is nil: there is no lane on this system.
func (*LaneServer) Host() pluginv1.HostClient { return nil }

// Serve fails: there is no lane on this system.
func (*LaneServer) Serve(func(context.Context, *pluginv1.CallToolRequest) *pluginv1.CallToolResponse) error {
	return errNoLane
}
