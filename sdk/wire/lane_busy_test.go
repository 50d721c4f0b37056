//go:build unix

package wire

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pluginv1 "github.com/troupe-dev/troupe/sdk/wire/proto/troupe/plugin/v1"
)

// A plugin that stops reading its control socket (stopped, its lane loop
// ended, or hostile) fills it: calls still end by their deadline, and
// leave no goroutine behind; once it is full, a call is not sent, and
// says so (ErrLaneBusy, Unavailable), for its caller to make it over gRPC.
func TestCallsEndByTheirDeadlineWhenThePluginStopsReadingItsControlSocket(t *testing.T) {
	lane, end, err := NewLane()
	require.NoError(t, err)
	defer end.Close() // the plugin's end: open, never read
	var busy error
	for i := range 5000 {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Millisecond)
		done := make(chan error, 1)
		go func() {
			_, err := lane.CallTool(ctx, &pluginv1.CallToolRequest{Name: "x"})
			done <- err
		}()
		select {
		case err := <-done:
			if errors.Is(err, ErrLaneBusy) {
				busy = err
			}
		case <-time.After(3 * time.Second):
			cancel()
			t.Fatalf("call %d outlived its 2ms deadline by 3s", i)
		}
		cancel()
	}
	require.ErrorIs(t, busy, ErrLaneBusy)
	assert.Equal(t, codes.Unavailable, status.Code(busy))
	require.NoError(t, lane.Close())
	goleak.VerifyNone(t)
}
