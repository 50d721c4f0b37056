package plugins_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/plugins"
	"github.com/troupe-dev/troupe/sdk"
	"github.com/troupe-dev/troupe/sdk/fault"
)

// failingSession is an agent's Session whose model calls fail with err.
type failingSession struct{ err error }

func (s failingSession) Generate(context.Context, agenttypes.GenerateRequest) (*agenttypes.GenerateResponse, error) {
	return nil, s.err
}
func (s failingSession) CallTool(context.Context, agenttypes.ToolCall) (string, error) {
	return "", s.err
}
func (failingSession) Tools() []agenttypes.ToolSpec { return nil }
func (failingSession) Note(string)                  {}
func (failingSession) Tree() agenttypes.Tree        { return nil }

// Every code of the one vocabulary means the same on both sides of the
// plugin boundary: in this process; from a plugin's tool to the host; and
// from the host (a provider's failure, say) to a plugin's own loop, which
// checks it there and hands it back. Each time errors.Is matches the
// code's one sentinel, which is also the name the host's packages and the
// sdk give it, and no other code's.
func TestEveryCodeMeansTheSameOnBothSidesOfThePluginBoundary(t *testing.T) {
	h, _ := newHost(t, plugins.Config{}, pluginDir(t, "test"))
	reg := loaded(t, h)
	relay, err := reg.Type("relay")
	require.NoError(t, err)
	// The names the code's sentinel has besides package fault's.
	aliases := map[fault.Code][]error{
		fault.Canceled: {context.Canceled}, fault.DeadlineExceeded: {context.DeadlineExceeded},
		fault.BudgetExceeded: {agenttypes.ErrBudgetExceeded, sdk.ErrBudgetExceeded},
		fault.ToolRefused:    {agenttypes.ErrToolRefused, sdk.ErrToolRefused},
		fault.NoParent:       {agenttypes.ErrNoParent, sdk.ErrNoParent},
		fault.RateLimited:    {sdk.ErrRateLimited}, fault.InvalidArgument: {sdk.ErrInvalidArgument},
		fault.Unavailable: {sdk.ErrUnavailable}, fault.Internal: {sdk.ErrInternal},
	}
	for _, code := range fault.Codes() {
		t.Run(string(code), func(t *testing.T) {
			check := func(t *testing.T, err error) {
				t.Helper()
				require.Error(t, err)
				assert.Equal(t, code, fault.CodeOf(err), "%v", err)
				for _, other := range fault.Codes() {
					if s := other.Sentinel(); s != nil {
						assert.Equal(t, other == code, errors.Is(err, s), "errors.Is(%v, the sentinel of %s)", err, other)
					}
				}
				for _, alias := range aliases[code] {
					assert.ErrorIs(t, err, alias)
				}
			}
			t.Run("in process", func(t *testing.T) {
				check(t, fault.Errorf(code, "failed"))
				if s := code.Sentinel(); s != nil {
					check(t, fmt.Errorf("wrapped: %w", s))
				}
			})
			ctx := ctxTimeout(t, 10*time.Second)
			t.Run("from a plugin", func(t *testing.T) {
				_, err := callTool(ctx, t, reg, "fail", `{"text":"`+string(code)+`"}`)
				check(t, err)
				assert.Contains(t, err.Error(), "plugin test: fail: the plugin fails with "+string(code), "the message names the plugin")
			})
			t.Run("to a plugin and back", func(t *testing.T) {
				sent := fault.Errorf(code, "the provider failed")
				_, err := relay.Loop.Run(ctx, failingSession{sent}, string(code))
				check(t, err)
				assert.Contains(t, err.Error(), "the provider failed")
				var got *fault.Error
				require.ErrorAs(t, err, &got)
				assert.Equal(t, sent.Retryable, got.Retryable, "whether to retry crosses too")
			})
		})
	}
}

// A condition narrower than its code (an unknown tool is a case of
// not_found, a plugin that exited of unavailable) crosses the boundary as
// its code.
func TestANarrowerSentinelCrossesAsItsCode(t *testing.T) {
	h, _ := newHost(t, plugins.Config{}, pluginDir(t, "test"))
	reg := loaded(t, h)
	relay, err := reg.Type("relay")
	require.NoError(t, err)
	for code, sent := range map[fault.Code]error{
		fault.NotFound:    fmt.Errorf("%w: no tool frob", agenttypes.ErrUnknownTool),
		fault.Unavailable: fmt.Errorf("%w: plugin other", agenttypes.ErrPluginExited),
	} {
		_, err := relay.Loop.Run(ctxTimeout(t, 10*time.Second), failingSession{sent}, string(code))
		require.ErrorIs(t, err, code.Sentinel(), "%v", err)
		assert.Contains(t, err.Error(), sent.Error())
	}
}
