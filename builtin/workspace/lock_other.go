//go:build !unix

package workspace

import (
	"context"
	"os"
	"path/filepath"
)

// createLocked makes dir/name. There are no advisory locks here, so
// Prune cannot tell a live workspace from one left behind.
func createLocked(dir, name string) (*os.File, error) {
	return os.OpenFile(filepath.Join(dir, name), os.O_CREATE|os.O_RDWR|os.O_EXCL, 0o600)
}

// tryLock reports every lock as held: without advisory locks, nothing
// is known to be left behind, and Prune removes nothing.
func tryLock(string, bool) (*os.File, bool, error) { return nil, false, nil }

// waitLock opens the file at path, made when create is set, without a
// lock: there are none here, so processes sharing a durable workspace
// are not kept from each other.
func waitLock(_ context.Context, path string, create bool) (*os.File, error) {
	flags := os.O_RDWR
	if create {
		flags |= os.O_CREATE
	}
	return os.OpenFile(path, flags, 0o600)
}
