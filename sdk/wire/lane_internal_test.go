//go:build unix

package wire

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pluginv1 "github.com/troupe-dev/troupe/sdk/wire/proto/troupe/plugin/v1"
)

// servedLane is a lane whose plugin end call serves on a goroutine of the
// test; it is closed, and its goroutines gone, when the test ends.
func servedLane(t *testing.T, call func(context.Context, *pluginv1.CallToolRequest) *pluginv1.CallToolResponse) (*Lane, <-chan error) {
	t.Helper()
	lane, end, err := NewLane()
	require.NoError(t, err)
	srv, err := laneServer(end)
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(call) }()
	t.Cleanup(func() {
		_ = lane.Close()
		goleak.VerifyNone(t)
	})
	return lane, served
}

func echo(_ context.Context, req *pluginv1.CallToolRequest) *pluginv1.CallToolResponse {
	return &pluginv1.CallToolResponse{Text: req.GetName() + ":" + string(req.GetArgs())}
}

func TestALaneCarriesCallsInFlightAtOnce(t *testing.T) {
	lane, _ := servedLane(t, echo)
	var wg sync.WaitGroup
	for g := range 6 {
		wg.Go(func() {
			for i := range 50 {
				resp, err := lane.CallTool(context.Background(), &pluginv1.CallToolRequest{Name: fmt.Sprint(g), Args: []byte(fmt.Sprint(i))})
				if assert.NoError(t, err) {
					assert.Equal(t, fmt.Sprintf("%d:%d", g, i), resp.GetText())
				}
			}
		})
	}
	wg.Wait()
}

// A cancelled call is left at once with the gRPC code of its context's
// end, and the plugin's side sees its context end too.
func TestACancelledCallEndsOnBothSides(t *testing.T) {
	started, ended := make(chan struct{}), make(chan error, 1)
	lane, _ := servedLane(t, func(ctx context.Context, req *pluginv1.CallToolRequest) *pluginv1.CallToolResponse {
		if req.GetName() != "block" {
			return echo(ctx, req)
		}
		close(started)
		<-ctx.Done()
		ended <- ctx.Err()
		return &pluginv1.CallToolResponse{}
	})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-started
		cancel()
	}()
	_, err := lane.CallTool(ctx, &pluginv1.CallToolRequest{Name: "block"})
	assert.Equal(t, codes.Canceled, status.Code(err))
	select {
	case err := <-ended:
		assert.ErrorIs(t, err, context.Canceled)
	case <-time.After(10 * time.Second):
		t.Fatal("the plugin's side of the call was not cancelled")
	}
	resp, err := lane.CallTool(context.Background(), &pluginv1.CallToolRequest{Name: "after"})
	require.NoError(t, err)
	assert.Equal(t, "after:", resp.GetText(), "the lane serves on")

	ctx, cancel = context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	<-ctx.Done()
	_, err = lane.CallTool(ctx, &pluginv1.CallToolRequest{Name: "late"})
	assert.Equal(t, codes.DeadlineExceeded, status.Code(err))
}

func TestMessagesLargerThanTheProtocolAllowsDoNotCross(t *testing.T) {
	lane, _ := servedLane(t, func(_ context.Context, req *pluginv1.CallToolRequest) *pluginv1.CallToolResponse {
		return &pluginv1.CallToolResponse{Text: strings.Repeat("x", MaxMessageSize+1)}
	})
	_, err := lane.CallTool(context.Background(), &pluginv1.CallToolRequest{Args: make([]byte, MaxMessageSize+1)})
	assert.Equal(t, codes.ResourceExhausted, status.Code(err))

	resp, err := lane.CallTool(context.Background(), &pluginv1.CallToolRequest{})
	require.NoError(t, err)
	assert.Empty(t, resp.GetText())
	assert.Equal(t, "invalid_argument", resp.GetError().GetCode())
	assert.Contains(t, resp.GetError().GetMessage(), "at most")
}

// A lane whose plugin end has gone fails its calls as Unavailable, as a
// gRPC call to a plugin that exited does.
func TestACallOnALaneWhosePluginIsGoneIsUnavailable(t *testing.T) {
	lane, end, err := NewLane()
	require.NoError(t, err)
	defer lane.Close()
	require.NoError(t, end.Close())
	_, err = lane.CallTool(context.Background(), &pluginv1.CallToolRequest{Name: "x"})
	assert.Equal(t, codes.Unavailable, status.Code(err))
}

// Closing the host's end ends the plugin's Serve.
func TestClosingALaneEndsItsServer(t *testing.T) {
	lane, served := servedLane(t, echo)
	_, err := lane.CallTool(context.Background(), &pluginv1.CallToolRequest{Name: "x"})
	require.NoError(t, err)
	require.NoError(t, lane.Close())
	select {
	case err := <-served:
		assert.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return")
	}
	_, err = lane.CallTool(context.Background(), &pluginv1.CallToolRequest{Name: "x"})
	assert.Equal(t, codes.Unavailable, status.Code(err))
}
