package plugins

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// The handshake line is read however the plugin's output is cut into
// reads, and only its first line counts.
func TestTheHandshakeLinesVersionIsReadAcrossReads(t *testing.T) {
	for _, tc := range []struct {
		name    string
		reads   []string
		version int
		ok      bool
	}{
		{"one read", []string{"1|99|unix|/tmp/plugin123|grpc\n"}, 99, true},
		{"split in the version", []string{"1|", "9", "9|unix|/tmp/p|grpc\nlater|7|x\n"}, 99, true},
		{"with a certificate and more lines", []string{"1|1|tcp|127.0.0.1:1|grpc|MIIB\n", "2|2|tcp\n"}, 1, true},
		{"no line yet", []string{"1|99|unix"}, 0, false},
		{"not a handshake", []string{"hello\n"}, 0, false},
		{"no version", []string{"1|x|unix|/p|grpc\n"}, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &startWatch{}
			for _, r := range tc.reads {
				w.saw([]byte(r))
			}
			v, ok := w.version()
			assert.Equal(t, tc.ok, ok)
			assert.Equal(t, tc.version, v)
		})
	}
}
