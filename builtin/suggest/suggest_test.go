package suggest_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/troupe-dev/troupe/builtin/suggest"
)

func TestNearest(t *testing.T) {
	tools := []string{"read", "grep", "glob", "ls", "git", "note"}
	tests := []struct{ word, want string }{
		{"reed", "read"},
		{"grpe", "grep"},
		{"gti", "git"},
		{"LS", "ls"},
		{"max-tokens", "max_tokens"},
		{"rm", ""}, // every letter changed: not a typo of "ls"
		{"x", ""},
		{"frobnicate", ""},
		{"", ""},
	}
	cands := append(tools, "max_tokens")
	for _, tt := range tests {
		assert.Equal(t, tt.want, suggest.Nearest(tt.word, cands), tt.word)
	}
}

func TestHint(t *testing.T) {
	few := []string{"plan", "explore", "explore"}
	assert.Equal(t, `; did you mean "plan"?`, suggest.Hint("PLAN", few, "types"))
	assert.Equal(t, "; the types are explore, plan", suggest.Hint("deploy", few, "types"), "sorted, each once")
	assert.Equal(t, "; no tools are registered", suggest.Hint("read", nil, "tools"))
	var many []string
	for i := range 13 {
		many = append(many, fmt.Sprintf("type%02d", i))
	}
	assert.Equal(t, "; none of the 13 types has a name close to it", suggest.Hint("deploy", many, "types"))
}

func TestSameName(t *testing.T) {
	for _, written := range []string{"max_tokens", "maxTokens", "max-tokens", "MAX TOKENS"} {
		assert.True(t, suggest.SameName("max_tokens", written), written)
	}
	assert.False(t, suggest.SameName("max_tokens", "max_turns"))
}

// Only a name's first 64 letters are compared, so that a hostile file
// cannot make the distance quadratic in its size; how far off a name may
// be must be judged on the same letters, or a long name of anything is
// "a typo" of every short one.
func TestALongNameIsNoTypoOfAShortOne(t *testing.T) {
	for _, n := range []int{100, 200, 1 << 20} {
		assert.Equal(t, "", suggest.Nearest(strings.Repeat("x", n), []string{"read", "grep"}), "%d letters", n)
	}
	long := strings.Repeat("max_tokens_", 10)
	assert.Equal(t, long, suggest.Nearest(long+"s", []string{"read", long}), "a long name's own typo is still found")
}
