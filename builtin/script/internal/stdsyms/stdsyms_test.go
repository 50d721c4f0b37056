package stdsyms

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The tables cost every program that links the package nothing until a
// script needs them.
func TestTablesAreBuiltAtTheFirstLoad(t *testing.T) {
	require.Empty(t, symbols, "nothing is built at start")
	got := Load()
	assert.Len(t, got, 12, "one table for each package scripts may import")
	assert.Contains(t, got["fmt/fmt"], "Sprintf")
	assert.Contains(t, got["unicode/utf8/utf8"], "RuneLen")
	assert.Equal(t, got, Load(), "built once")
}
