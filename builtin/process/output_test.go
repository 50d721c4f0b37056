package process

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
)

// capped writes data to a cappedOutput of max bytes in chunks of n.
func capped(max, n int, data []byte) string {
	o := newCappedOutput(max)
	for len(data) > 0 {
		k := min(n, len(data))
		_, _ = o.Write(data[:k])
		data = data[k:]
	}
	return o.String()
}

func TestCappedOutputKeepsAllThatFits(t *testing.T) {
	assert.Equal(t, "", capped(10, 3, nil))
	assert.Equal(t, "0123456789", capped(10, 3, []byte("0123456789")))
}

func TestCappedOutputIsTheSameHoweverItIsWritten(t *testing.T) {
	var data bytes.Buffer
	for i := range 1000 {
		fmt.Fprintf(&data, "%d\n", i)
	}
	for _, max := range []int{1, 2, 7, 100, 1001} {
		want := capped(max, data.Len(), data.Bytes())
		head, tail := data.String()[:max/2], data.String()[data.Len()-(max-max/2):]
		sep := ""
		if head != "" && !strings.HasSuffix(head, "\n") {
			sep = "\n"
		}
		assert.Equal(t, fmt.Sprintf("%s%s[... %d bytes of output cut ...]\n%s", head, sep, data.Len()-max, tail), want, "max %d", max)
		for _, n := range []int{1, 3, max, 2*max + 1, 4096} {
			assert.Equal(t, want, capped(max, n, data.Bytes()), "max %d, writes of %d", max, n)
		}
	}
}

func TestCappedOutputSplitsNoCharacter(t *testing.T) {
	data := []byte(strings.Repeat("é", 100)) // two bytes each
	got := capped(9, 5, data)                // a head of 4 bytes, a tail of 5
	assert.True(t, utf8.ValidString(got), "%q", got)
	assert.Equal(t, "éé\n[... 192 bytes of output cut ...]\néé", got)
	data = []byte("ab" + strings.Repeat("€", 50)) // three bytes each
	got = capped(8, 8, data)
	assert.True(t, utf8.ValidString(got), "%q", got)
	assert.Equal(t, "ab\n[... 147 bytes of output cut ...]\n€", got)
}
