//go:build linux

package process_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/troupe-dev/troupe/builtin/process"
)

// BenchmarkRun is what running a command costs: its keeper, Landlock,
// and without network the network and mount namespaces and the hiding
// of the host's sockets.
func BenchmarkRun(b *testing.B) {
	root := b.TempDir()
	work := filepath.Join(root, "work")
	if err := os.Mkdir(work, 0o755); err != nil {
		b.Fatal(err)
	}
	for _, network := range []bool{true, false} {
		name := map[bool]string{true: "network", false: "no network"}[network]
		b.Run(name, func(b *testing.B) {
			cmd := process.Command{
				Args: []string{"true"}, Dir: work, Writable: []string{work}, Network: network,
				Env: process.Env(os.Environ(), "GORACE=atexit_sleep_ms=0"),
			}
			for b.Loop() {
				res, err := process.Run(context.Background(), cmd)
				if err != nil || res.ExitCode != 0 {
					b.Fatal(err, res.Output)
				}
			}
		})
	}
}
