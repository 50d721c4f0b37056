//go:build linux

package mcp_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/troupe-dev/troupe/builtin/process"
)

func TestMain(m *testing.M) {
	// Keepers, servers and owners are this test binary, re-executed.
	process.ServeIfKeeper()
	serveIfAsked()
	goleak.VerifyTestMain(m)
}
