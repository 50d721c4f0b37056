//go:build !unix

package devserver

import (
	"errors"
	"os/exec"
)

var errNoGroups = errors.New("devserver: needs a unix system, which can stop a server by its process group")

func startGroup(*exec.Cmd) error { return errNoGroups }

func (s *Server) stop() error { return errNoGroups }
