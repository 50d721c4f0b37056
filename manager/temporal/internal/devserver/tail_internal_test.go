package devserver

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestTailKeepsTheLastBytes(t *testing.T) {
	tl := newTail(8)
	_, _ = tl.Write([]byte("abcd"))
	assert.Equal(t, "abcd", tl.String())
	_, _ = tl.Write([]byte("efghij"))
	assert.Equal(t, "[2 earlier bytes dropped]\ncdefghij", tl.String())
	_, _ = tl.Write([]byte(strings.Repeat("x", 20) + "12345678"))
	assert.Equal(t, "[30 earlier bytes dropped]\n12345678", tl.String())
	assert.LessOrEqual(t, cap(tl.buf), 16, "the buffer stays bounded")
}
