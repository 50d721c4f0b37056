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
	srv, err := laneServerOf(end)
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
	lane, _ := servedLane(t, func(ctx context.Context, req *pluginv1.CallToolRequest) *pluginv1.CallToolResponse {
		if req.GetName() == "big" {
			return &pluginv1.CallToolResponse{Text: strings.Repeat("x", MaxMessageSize+1)}
		}
		return echo(ctx, req)
	})
	_, err := lane.CallTool(context.Background(), &pluginv1.CallToolRequest{Args: make([]byte, MaxMessageSize+1)})
	assert.Equal(t, codes.ResourceExhausted, status.Code(err))

	_, err = lane.CallTool(context.Background(), &pluginv1.CallToolRequest{Name: "big"})
	assert.Equal(t, codes.ResourceExhausted, status.Code(err))
	assert.Contains(t, err.Error(), "at most")

	resp, err := lane.CallTool(context.Background(), &pluginv1.CallToolRequest{Name: "small"})
	require.NoError(t, err, "the lane serves on")
	assert.Equal(t, "small:", resp.GetText())
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

// fakeHost answers Generate with its messages' text, and holds AskParent
// until its context ends.
type fakeHost struct {
	pluginv1.UnimplementedHostServer
	asked chan struct{}
	ended chan error
}

func (fakeHost) Generate(_ context.Context, req *pluginv1.GenerateRequest) (*pluginv1.GenerateResponse, error) {
	return &pluginv1.GenerateResponse{Text: req.GetRunId() + ":" + req.GetMessages()[0].GetText()}, nil
}

func (h fakeHost) AskParent(ctx context.Context, _ *pluginv1.AskParentRequest) (*pluginv1.AskParentResponse, error) {
	close(h.asked)
	<-ctx.Done()
	h.ended <- ctx.Err()
	return &pluginv1.AskParentResponse{}, nil
}

// The plugin calls the host's Host service on the same lane, and its
// cancellations reach the host.
func TestAPluginCallsItsHostOnTheLane(t *testing.T) {
	lane, end, err := NewLane()
	require.NoError(t, err)
	p, err := peerOf(end)
	require.NoError(t, err)
	plugin := &LaneServer{p: p}
	served := make(chan error, 1)
	go func() { served <- plugin.Serve(echo) }()
	h := fakeHost{asked: make(chan struct{}), ended: make(chan error, 1)}
	lane.ServeHost(h)
	defer func() {
		require.NoError(t, lane.Close())
		require.NoError(t, <-served)
		goleak.VerifyNone(t)
	}()

	host := plugin.Host()
	resp, err := host.Generate(context.Background(), &pluginv1.GenerateRequest{RunId: "r1", Messages: []*pluginv1.Message{{Text: "hi"}}})
	require.NoError(t, err)
	assert.Equal(t, "r1:hi", resp.GetText())
	tool, err := lane.CallTool(context.Background(), &pluginv1.CallToolRequest{Name: "both", Args: []byte("ways")})
	require.NoError(t, err)
	assert.Equal(t, "both:ways", tool.GetText(), "the host's calls cross the same lane")

	_, err = host.Tools(context.Background(), &pluginv1.ToolsRequest{})
	assert.Equal(t, codes.Unimplemented, status.Code(err), "the host's own error comes back as its status")

	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-h.asked
		cancel()
	}()
	_, err = host.AskParent(ctx, &pluginv1.AskParentRequest{})
	assert.Equal(t, codes.Canceled, status.Code(err))
	select {
	case err := <-h.ended:
		assert.ErrorIs(t, err, context.Canceled)
	case <-time.After(10 * time.Second):
		t.Fatal("the host's side of the call was not cancelled")
	}
}
