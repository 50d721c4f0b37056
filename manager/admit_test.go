package manager_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/manager"
	"github.com/troupe-dev/troupe/manager/scripted"
)

// TestARefusedSpawnIsNeverAnAgent: a Spawn refused for a full queue is
// never listed, so nobody can wait on an agent that will never end.
func TestARefusedSpawnIsNeverAnAgent(t *testing.T) {
	reg := agenttypes.NewRegistry()
	require.NoError(t, reg.RegisterType(agenttypes.Type{Name: "w", Description: "d", Prompt: "p"}))
	model := scripted.New(scripted.Step{Block: true}).WithoutRecording()
	mgr, err := manager.New(manager.Config{
		Logger: slog.New(slog.DiscardHandler), Registry: reg, DefaultModel: "s",
		Models:        manager.ModelResolverFunc(func(context.Context, string) (llms.Model, error) { return model, nil }),
		MaxConcurrent: 1, MaxQueue: 1,
	})
	require.NoError(t, err)
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = mgr.Close(ctx)
	}()
	running, err := mgr.Spawn(context.Background(), manager.SpawnRequest{Type: "w", Task: "t"})
	require.NoError(t, err)
	queued, err := mgr.Spawn(context.Background(), manager.SpawnRequest{Type: "w", Task: "t"})
	require.NoError(t, err)

	const refusals = 2000
	refused := make(chan error, 1)
	go func() {
		for range refusals {
			if _, err := mgr.Spawn(context.Background(), manager.SpawnRequest{Type: "w", Task: "t"}); !errors.Is(err, manager.ErrQueueFull) {
				refused <- err
				return
			}
		}
		refused <- nil
	}()
	for {
		for _, info := range mgr.List(manager.Filter{}) {
			if info.ID != running.ID() && info.ID != queued.ID() {
				t.Fatalf("List showed %s (%s), an agent its Spawn refused", info.ID, info.State)
			}
		}
		select {
		case err := <-refused:
			require.NoError(t, err, "every Spawn past the queue is refused with ErrQueueFull")
			return
		default:
		}
	}
}
