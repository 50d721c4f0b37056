package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/agenttypes"
)

func TestAPatchShownOnATerminalCannotTalkToIt(t *testing.T) {
	patch := "+ok\tcafé ✓\n+\x1b]52;c;ZWNobyBwd25lZA==\x07hidden\n+\x1b[2K\x1b[1Aerased\r\n+c1 \u009b31m and bad \xff\xfe bytes\n"
	var out bytes.Buffer
	require.NoError(t, copyShown(&out, strings.NewReader(patch)))
	assert.Equal(t, "+ok\tcafé ✓\n+\\x1b]52;c;ZWNobyBwd25lZA==\\x07hidden\n+\\x1b[2K\\x1b[1Aerased\\x0d\n+c1 \\x9b31m and bad \\xff\\xfe bytes\n", out.String())
}

func TestTheSummarySaysWhatIgnoreRulesLeftOut(t *testing.T) {
	ch := &agenttypes.Changes{Branch: "troupe/r/a", Added: []string{"a.go"}, Insertions: 3, Ignored: []string{"build/", ".env"}, IgnoredCount: 2}
	s := changesSummary("run-1", ch)
	assert.Contains(t, s, "not recorded: 2 files the agent left in its workspace that ignore rules keep out of git (build/, .env)")
	assert.Contains(t, s, "changed 1 file (+3 −0)")
	assert.Equal(t, "", changesSummary("run-1", &agenttypes.Changes{}), "nothing changed, nothing left out: nothing to say")
	only := changesSummary("run-1", &agenttypes.Changes{Ignored: []string{"out.log"}, IgnoredCount: 1})
	assert.Equal(t, "not recorded: 1 file the agent left in its workspace that ignore rules keep out of git (out.log)", only)
}
