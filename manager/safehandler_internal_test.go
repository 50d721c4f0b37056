package manager

import (
	"bytes"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
)

// attrsPanicker panics when attributes or a group are added, and writes
// records through a text handler otherwise.
type attrsPanicker struct{ slog.Handler }

func (attrsPanicker) WithAttrs([]slog.Attr) slog.Handler { panic("WithAttrs exploded") }
func (attrsPanicker) WithGroup(string) slog.Handler      { panic("WithGroup exploded") }

// The manager adds an agent's attributes to the logger while an agent
// ends; a handler that panics there must not take the ending with it.
func TestSafeHandlerRecoversWithAttrsAndWithGroup(t *testing.T) {
	var buf bytes.Buffer
	l := slog.New(safeHandler{attrsPanicker{slog.NewTextHandler(&buf, nil)}})
	assert.NotPanics(t, func() { l = l.With("agent", "a1").WithGroup("g") })
	l.Info("still logs")
	assert.Contains(t, buf.String(), "still logs")
}
