package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAPatchShownOnATerminalCannotTalkToIt(t *testing.T) {
	patch := "+ok\tcafé ✓\n+\x1b]52;c;ZWNobyBwd25lZA==\x07hidden\n+\x1b[2K\x1b[1Aerased\r\n+c1 \u009b31m and bad \xff\xfe bytes\n"
	var out bytes.Buffer
	require.NoError(t, copyShown(&out, strings.NewReader(patch)))
	assert.Equal(t, "+ok\tcafé ✓\n+\\x1b]52;c;ZWNobyBwd25lZA==\\x07hidden\n+\\x1b[2K\\x1b[1Aerased\\x0d\n+c1 \\x9b31m and bad \\xff\\xfe bytes\n", out.String())
}
