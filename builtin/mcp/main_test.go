//go:build linux

package mcp_test

import (
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/troupe-dev/troupe/builtin/process"
)

func TestMain(m *testing.M) {
	// Keepers, servers and owners are this test binary, re-executed.
	process.ServeIfKeeper()
	// Keepers are this race-built binary: none sleeps a second as it
	// exits, which every Close would wait for.
	os.Setenv("GORACE", "atexit_sleep_ms=0")
	serveIfAsked()
	goleak.VerifyTestMain(m)
}
