//go:build unix

package agenttypes_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/agenttypes"
)

// within fails the test when fn does not return within a few seconds:
// what it opens must never block on a named pipe.
func within(t *testing.T, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); fn() }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("blocked on a named pipe")
	}
}

// A named pipe in the place of a definition or of a definition's
// script_file is a diagnostic, never a hang.
func TestNamedPipesInPlaceOfDefinitionsAndScripts(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, syscall.Mkfifo(filepath.Join(dir, "piped.yaml"), 0o600))
	require.NoError(t, syscall.Mkfifo(filepath.Join(dir, "hooks.go"), 0o600))
	def := filepath.Join(dir, "scripted.yaml")
	require.NoError(t, os.WriteFile(def, []byte("name: scripted\ndescription: d\nscript_file: hooks.go\n"), 0o600))
	within(t, func() {
		_, diags := agenttypes.LoadFiles(agenttypes.LoadOptions{}, filepath.Join(dir, "piped.yaml"), def)
		text := diags.String()
		assert.Contains(t, text, "piped.yaml: not a regular file (a named pipe)")
		assert.Contains(t, text, `script_file "hooks.go" is a named pipe, not a regular file`)
	})
}
