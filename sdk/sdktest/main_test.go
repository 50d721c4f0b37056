package sdktest

import (
	"os"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// The suite's waits are shortened so that the broken tools and loops below
// are caught quickly; the waits of the broken ones are longer still, so
// they are caught however loaded the machine. goleak checks that every
// goroutine the suite starts has ended.
func TestMain(m *testing.M) {
	callTimeout = 3 * time.Second
	loopTimeout = 3 * time.Second
	cancelGrace = 300 * time.Millisecond
	code := m.Run()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			os.Stderr.WriteString("goleak: " + err.Error() + "\n")
			code = 1
		}
	}
	os.Exit(code)
}
