package devserver_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/manager/temporal/internal/devserver"
)

func TestStartSkipsWithoutTheCLI(t *testing.T) {
	t.Setenv(devserver.BinEnv, "")
	var skipped bool
	t.Run("unset", func(t *testing.T) {
		defer func() { skipped = t.Skipped() }()
		devserver.Start(t)
	})
	assert.True(t, skipped, "Start must skip a test when %s is unset", devserver.BinEnv)
}

func TestLaunchRefusesAMissingCLI(t *testing.T) {
	_, err := devserver.Launch(t.Context(), devserver.Options{Bin: filepath.Join(t.TempDir(), "temporal"), Dir: t.TempDir()})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "make integration")
}

// fakeCLI writes a shell script that stands in for the Temporal CLI.
func fakeCLI(t *testing.T, script string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "temporal")
	require.NoError(t, os.WriteFile(bin, []byte("#!/bin/sh\n"+script), 0o755))
	return bin
}

func TestLaunchTriesAgainOnceWhenAPortWasTaken(t *testing.T) {
	dir := t.TempDir()
	bin := fakeCLI(t, `echo run >> runs; echo "listen tcp 127.0.0.1:1: bind: address already in use" >&2; exit 1`)
	_, err := devserver.Launch(t.Context(), devserver.Options{Bin: bin, Dir: dir})
	require.ErrorIs(t, err, devserver.ErrNotServing)
	assert.Contains(t, err.Error(), "address already in use", "the error shows the server's output")
	runs, readErr := os.ReadFile(filepath.Join(dir, "runs"))
	require.NoError(t, readErr)
	assert.Equal(t, 2, strings.Count(string(runs), "run"), "a start whose port was taken is tried exactly once more")
}

func TestLaunchDoesNotRetryOtherFailures(t *testing.T) {
	dir := t.TempDir()
	bin := fakeCLI(t, `echo run >> runs; echo "unknown flag" >&2; exit 1`)
	_, err := devserver.Launch(t.Context(), devserver.Options{Bin: bin, Dir: dir})
	require.ErrorIs(t, err, devserver.ErrNotServing)
	runs, readErr := os.ReadFile(filepath.Join(dir, "runs"))
	require.NoError(t, readErr)
	assert.Equal(t, 1, strings.Count(string(runs), "run"))
}

func TestLaunchKillsTheGroupOfAServerThatNeverServes(t *testing.T) {
	dir := t.TempDir()
	// The fake starts a child of its own and never serves.
	bin := fakeCLI(t, `sleep 600 & echo $! > child; echo started; wait`)
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	_, err := devserver.Launch(ctx, devserver.Options{Bin: bin, Dir: dir})
	require.ErrorIs(t, err, devserver.ErrNotServing)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Contains(t, err.Error(), "started", "the error shows the server's output")
	raw, readErr := os.ReadFile(filepath.Join(dir, "child"))
	require.NoError(t, readErr)
	child, convErr := strconv.Atoi(strings.TrimSpace(string(raw)))
	require.NoError(t, convErr)
	assert.True(t, errors.Is(syscall.Kill(child, 0), syscall.ESRCH), "the server's child %d outlived a failed start", child)
}

func TestLaunchGivesTheServerNoneOfTheCallersEnvironment(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("TROUPE_TEST_SECRET", "do-not-pass")
	bin := fakeCLI(t, `env > env; exit 1`)
	_, err := devserver.Launch(t.Context(), devserver.Options{Bin: bin, Dir: dir})
	require.ErrorIs(t, err, devserver.ErrNotServing)
	env, readErr := os.ReadFile(filepath.Join(dir, "env"))
	require.NoError(t, readErr)
	assert.NotContains(t, string(env), "TROUPE_TEST_SECRET")
	assert.Contains(t, string(env), "HOME="+dir+"\n", "the server's home is its own directory")
}
