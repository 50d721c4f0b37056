//go:build !unix

package tools_test

import "testing"

func mkfifo(t *testing.T, path string) {
	t.Skip("no named pipes on this system")
}
