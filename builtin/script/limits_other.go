//go:build !unix

package script

func setLimits(int64) {}
