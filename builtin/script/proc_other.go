//go:build !linux

package script

import "syscall"

func procAttr() *syscall.SysProcAttr { return nil }
