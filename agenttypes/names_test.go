package agenttypes

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// Each name shape says what the counted pattern it stands for says.
func TestNameShapesMatchTheirCountedPatterns(t *testing.T) {
	shapes := []struct {
		name    string
		shape   nameShape
		counted string
	}{
		{"type", typeName, `^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`},
		{"script tool", toolName, `^[a-z][a-z0-9_]{0,63}$`},
		{"MCP server", mcpServerName, `^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$`},
	}
	var names []string
	for _, first := range []string{"a", "Z", "0", "_", "-", ".", "é", " "} {
		for _, rest := range []string{"", "b", "b.c", "b_c", "b-c", "b c", "b/c", "bé", "B"} {
			for _, n := range []int{0, 30, 31, 32, 62, 63, 64, 100} {
				names = append(names, first+rest+strings.Repeat("x", max(0, n-len(first)-len(rest))))
			}
		}
	}
	names = append(names, "", "a\n", "\na")
	for _, s := range shapes {
		counted := regexp.MustCompile(s.counted)
		for _, n := range names {
			assert.Equal(t, counted.MatchString(n), s.shape.MatchString(n), "%s name %q", s.name, n)
		}
	}
}
