//go:build unix

package wire_test

import (
	"context"
	"fmt"
	"os"
	"strconv"

	"github.com/troupe-dev/troupe/sdk/wire"
	pluginv1 "github.com/troupe-dev/troupe/sdk/wire/proto/troupe/plugin/v1"
)

// The host makes a lane and passes its end to the plugin it starts; here
// both sides are in one process, the plugin's end found as a plugin finds
// it, through EnvLaneFD.
func ExampleNewLane() {
	lane, end, err := wire.NewLane()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer lane.Close()
	// The host would pass end in cmd.ExtraFiles and name its descriptor.
	os.Setenv(wire.EnvLaneFD, strconv.Itoa(int(end.Fd())))
	plugin, err := wire.LaneFromEnv()
	if err != nil {
		fmt.Println(err)
		return
	}
	served := make(chan error, 1)
	go func() {
		served <- plugin.Serve(func(_ context.Context, req *pluginv1.CallToolRequest) *pluginv1.CallToolResponse {
			return &pluginv1.CallToolResponse{Text: "hello from " + req.GetName()}
		})
	}()
	resp, err := lane.CallTool(context.Background(), &pluginv1.CallToolRequest{Name: "greet", Args: []byte(`{}`)})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(resp.GetText())
	lane.Close()
	fmt.Println(<-served)
	// Output:
	// hello from greet
	// <nil>
}
