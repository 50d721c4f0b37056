package workspace

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/troupe-dev/troupe/agenttypes"
)

func TestTheUserIsToldOnceWhenCommandsRanUnconfined(t *testing.T) {
	var logs bytes.Buffer
	p := &Provider{cfg: Config{Logger: slog.New(slog.NewTextHandler(&logs, nil))}}
	p.warnUnconfined(agenttypes.Confinement{Network: true, Writes: true}, false)
	p.warnUnconfined(agenttypes.Confinement{Network: false, Writes: true}, true)
	assert.Empty(t, logs.String(), "confined as asked: nothing to say")

	p.warnUnconfined(agenttypes.Confinement{Network: false, Writes: false}, false)
	p.warnUnconfined(agenttypes.Confinement{Network: false, Writes: false}, false)
	out := logs.String()
	assert.Equal(t, 1, strings.Count(out, "less confinement than asked"), "said once")
	assert.Contains(t, out, "no Landlock")
	assert.Contains(t, out, "network namespace")
}
