package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/troupe-dev/troupe/sdk"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestByHandSaysHowToInstall(t *testing.T) {
	msg := byHand("hello", "/some/where/troupe-plugin-hello")
	assert.Contains(t, msg, "troupe-plugin-hello is a troupe plugin")
	assert.Contains(t, msg, ".troupe/plugins/")
	assert.Contains(t, msg, "troupe plugins lock")
}

func TestLogLinesUseHclogKeys(t *testing.T) {
	var buf bytes.Buffer
	slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{ReplaceAttr: hclogKeys})).Warn("careful", "n", 1)
	var line map[string]any
	require.NoError(t, json.Unmarshal(buf.Bytes(), &line))
	assert.Equal(t, "warn", line["@level"])
	assert.Equal(t, "careful", line["@message"])
	assert.NotEmpty(t, line["@timestamp"])
	assert.EqualValues(t, 1, line["n"])
}

func TestGuardRecoversPanicsAndCatchesStuckCalls(t *testing.T) {
	stuck := make(chan string, 1)
	s, err := newServer(sdk.Plugin{Name: "p"}, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	s.grace = 50 * time.Millisecond
	s.stuck = func(what string) { stuck <- what }

	err = s.guard(context.Background(), "tool x", func(context.Context) error { panic("oops") })
	require.ErrorIs(t, err, sdk.ErrInternal)
	assert.Contains(t, err.Error(), "panic in tool x: oops")
	assert.Contains(t, err.Error(), "serve_test.go", "the stack is kept")

	ctx, cancel := context.WithCancel(context.Background())
	release := make(chan struct{})
	go func() {
		_ = s.guard(ctx, "tool slow", func(context.Context) error { <-release; return nil })
	}()
	cancel()
	select {
	case what := <-stuck:
		assert.Equal(t, "tool slow", what)
	case <-time.After(5 * time.Second):
		t.Fatal("a call that ignored its cancellation was not caught")
	}
	close(release)

	// A call that ends in time after its cancellation is left alone.
	ctx, cancel = context.WithCancel(context.Background())
	cancel()
	require.ErrorIs(t, s.guard(ctx, "tool quick", func(ctx context.Context) error { return ctx.Err() }), context.Canceled)
	select {
	case what := <-stuck:
		t.Fatalf("%s was called stuck", what)
	case <-time.After(150 * time.Millisecond):
	}
}

func TestDuplicateNamesAreRefused(t *testing.T) {
	tool := &sdk.ToolFunc{ToolSpec: sdk.ToolSpec{Name: "a"}}
	_, err := newServer(sdk.Plugin{Tools: []sdk.Tool{tool, tool}}, slog.New(slog.DiscardHandler))
	assert.ErrorContains(t, err, `two tools are named "a"`)
	_, err = newServer(sdk.Plugin{Types: []sdk.Type{{Name: "t"}, {Name: "t"}}}, slog.New(slog.DiscardHandler))
	assert.ErrorContains(t, err, `two types are named "t"`)
}
