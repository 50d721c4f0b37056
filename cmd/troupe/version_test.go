package main

import (
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestVersionLine(t *testing.T) {
	tests := []struct {
		name string
		b    buildStamp
		want string
	}{
		{"a checkout", buildStamp{version: "v0.0.0-20261126005818-dc4874d55e05", commit: "dc4874d55e05111213056fddde5244878be2a609", time: "2026-11-26T00:58:18Z", goVer: "go1.26.8"},
			"troupe v0.0.0-20261126005818-dc4874d55e05 (commit dc4874d55e05, 2026-11-26T00:58:18Z, go1.26.8)"},
		{"a checkout with changes", buildStamp{version: "v0.0.0-20261126005818-dc4874d55e05+dirty", commit: "dc4874d55e05111213056fddde5244878be2a609", time: "2026-11-26T00:58:18Z", modified: true, goVer: "go1.26.8"},
			"troupe v0.0.0-20261126005818-dc4874d55e05+dirty (commit dc4874d55e05+dirty, 2026-11-26T00:58:18Z, go1.26.8)"},
		{"go install module@version", buildStamp{version: "v1.2.3", goVer: "go1.26.8"}, "troupe v1.2.3 (go1.26.8)"},
		{"nothing recorded", buildStamp{goVer: "go1.26.8"}, "troupe devel (go1.26.8)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, versionLine(tt.b))
		})
	}
}

// TestVersion runs the command; that a build from a git checkout names
// its commit is checked by CI's walkthrough, which builds troupe from a
// fresh clone as a user would.
func TestVersion(t *testing.T) {
	o := troupe(t, "version")
	require.Equal(t, exitOK, o.code, o.stderr)
	assert.True(t, strings.HasPrefix(o.stdout, "troupe "), o.stdout)
	assert.Contains(t, o.stdout, runtime.Version())
}
