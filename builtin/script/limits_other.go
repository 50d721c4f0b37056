//go:build !unix

package script

func setLimits(int64) {}

func limitCPU(int) {}

func onCPULimit(func()) {}
