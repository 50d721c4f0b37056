//go:build unix

package process_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/troupe-dev/troupe/builtin/process"
)

// A command runs in its workspace with a scrubbed environment, may write
// only there and in its temporary directory, has no network, and leaves
// nothing behind. The program calls process.ServeIfKeeper first in main.
func ExampleRun() {
	work, err := os.MkdirTemp("", "workspace-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(work)
	res, err := process.Run(context.Background(), process.Command{
		Args:     []string{"sh", "-c", "echo built > out.txt && cat out.txt; exit 3"},
		Dir:      work,
		Env:      process.Env(os.Environ()),
		Timeout:  time.Minute,
		Writable: []string{work},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(res.Output)
	fmt.Println("exit status", res.ExitCode)
	// Output:
	// built
	// exit status 3
}
