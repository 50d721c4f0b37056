package workspace

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// The ignored entries are read whole however git's output is cut
// between writes, only "!!" entries count, and only the first few are
// kept.
func TestIgnoredListerReadsEntriesCutBetweenWrites(t *testing.T) {
	var out strings.Builder
	out.WriteString(" M f.txt\x00?? new.txt\x00")
	for i := range 25 {
		out.WriteString("!! dir" + strings.Repeat("x", i) + "/\x00")
	}
	for size := 1; size <= 7; size++ {
		l := &ignoredLister{max: 20}
		s := out.String()
		for len(s) > 0 {
			n := min(size, len(s))
			_, _ = l.Write([]byte(s[:n]))
			s = s[n:]
		}
		assert.Equal(t, 25, l.count, "writes of %d bytes", size)
		assert.Len(t, l.first, 20)
		assert.Equal(t, "dir/", l.first[0])
		assert.Equal(t, "dirxxx/", l.first[3])
	}
}
