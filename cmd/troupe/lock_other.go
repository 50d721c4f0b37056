//go:build !unix

package main

import (
	"errors"
	"os"
)

// lockSupported says whether live runs hold a lock on their transcript:
// not here, where a run without a completed event is taken for interrupted
// only once its transcript has been quiet for staleAfter.
const lockSupported = false

func holdLock(*os.File) error { return errors.ErrUnsupported }

func lockedByOther(*os.File) bool { return false }
