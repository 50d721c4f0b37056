package script

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	ServeIfChild() // the test binary is its own script host
	goleak.VerifyTestMain(m)
}
