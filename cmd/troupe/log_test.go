package main

import (
	"bytes"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestLogLinesSpeakLikeTheCommand(t *testing.T) {
	var buf bytes.Buffer
	l := slog.New(newLineHandler(&buf, slog.LevelWarn))
	l.Info("not shown at the default level")
	l.With("plugin", "todos").Warn("plugin exited", "status", "signal: killed", "crashes", 1)
	l.WithGroup("transcript").Error("cannot write", "path", "/runs/x.jsonl")
	assert.Equal(t,
		"troupe: warning: plugin exited (plugin=todos, status=\"signal: killed\", crashes=1)\n"+
			"troupe: error: cannot write (transcript.path=/runs/x.jsonl)\n",
		buf.String())
}
