package plugins

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// The checks of plugin names and lock file checksums say what the
// counted patterns they stand for say.
func TestNameAndChecksumChecksMatchTheirCountedPatterns(t *testing.T) {
	name := regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)
	sum := regexp.MustCompile(`^[0-9a-f]{64}$`)
	var ss []string
	for _, first := range []string{"a", "0", "f", "A", "_", "-", "é", " "} {
		for _, rest := range []string{"", "b", "b_c", "b-c", "b.c", "B", "g", "b c", "bé"} {
			for _, n := range []int{0, 1, 63, 64, 65, 100} {
				ss = append(ss, first+rest+strings.Repeat("e", max(0, n-len(first)-len(rest))))
			}
		}
	}
	ss = append(ss, "", "a\n", strings.Repeat("0", 63)+"\n")
	for _, s := range ss {
		assert.Equal(t, name.MatchString(s), validPluginName(s), "name %q", s)
		assert.Equal(t, sum.MatchString(s), isHexSHA256(s), "checksum %q", s)
	}
}
