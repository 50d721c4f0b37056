package main

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestRunOnTheManagerItself(t *testing.T) {
	t.Setenv("TROUPE_MODEL", "")
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), filepath.Join("..", ".."), &out))
	assert.Contains(t, out.String(), "where are tool calls executed?\n  completed")
	assert.Contains(t, out.String(), "manager/", "findings point into the manager package")
}
