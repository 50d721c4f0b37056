//go:build !linux

package process

import "os/exec"

// Kept contains cmd as Contain does: without a parent-death signal that a
// keeper could catch, no keeper is started.
func Kept(cmd *exec.Cmd) *exec.Cmd {
	Contain(cmd)
	return cmd
}

// KeeperRemoves does nothing: without a keeper, nothing outlives this
// program to remove dir.
func KeeperRemoves(kept *exec.Cmd, dir string) {}

func serveKeeper() bool { return false }
