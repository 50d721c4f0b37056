package process

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// confineRequest is what Run asks a keeper to apply to its command
// (envKeeperConfine); the keeper answers on the status descriptor, the
// one after the files it passes on, with a keeperStatus.
type confineRequest struct {
	// Writable are the directories the command may change files in.
	Writable []string `json:"writable"`
	// HostSockets lets the command reach the host's sockets; without
	// it, abstract Unix sockets made outside its confinement are out of
	// its reach where Landlock can scope them.
	HostSockets bool `json:"host_sockets,omitempty"`
	// Hide are the directories where the host's sockets live, to hide
	// from the command: given when the keeper has a mount namespace of
	// its own.
	Hide []string `json:"hide,omitempty"`
	// Visible are directories the command reads, to show again where
	// they lie beneath one of Hide.
	Visible []string `json:"visible,omitempty"`

	status *os.File
}

// keeperStatus is a keeper's answer to a confinement request: how the
// command was confined once it started, or why it did not start.
type keeperStatus struct {
	Writes bool `json:"writes"`
	// Hidden: every directory of the request's Hide was hidden.
	Hidden bool `json:"hidden,omitempty"`
	// Note says why they were not, when hiding them failed.
	Note  string `json:"note,omitempty"`
	Error string `json:"error,omitempty"`
}

// readConfineRequest reads the keeper's confinement request, whose
// status descriptor is fd; nil when there is none.
func readConfineRequest(fd int) (*confineRequest, error) {
	v, ok := os.LookupEnv(envKeeperConfine)
	if !ok {
		return nil, nil
	}
	// The status is the keeper's, not the command's.
	syscall.CloseOnExec(fd)
	status := os.NewFile(uintptr(fd), "keeper status")
	var req confineRequest
	if err := json.Unmarshal([]byte(v), &req); err != nil {
		status.Close()
		return nil, fmt.Errorf("reading the confinement request: %w", err)
	}
	req.status = status
	return &req, nil
}

// startConfined starts cmd, confined as req asks when there is a
// request, and returns 0, or the keeper's exit status when cmd could not
// start.
func startConfined(cmd *exec.Cmd, req *confineRequest) int {
	if req == nil {
		if err := cmd.Start(); err != nil {
			fmt.Fprintf(os.Stderr, "troupe keeper: %v\n", err)
			return 126
		}
		return 0
	}
	defer req.status.Close()
	closeOnExecFrom(3 + len(cmd.ExtraFiles))
	// Landlock confines the thread that restricts itself and what that
	// thread starts afterwards: cmd starts on this very thread, which
	// stays locked, confined for good.
	runtime.LockOSThread()
	var st keeperStatus
	if len(req.Hide) > 0 {
		hidden, err := hideSockets(req, cmd.Path)
		st.Hidden = hidden
		if err != nil {
			st.Note = "hiding the host's sockets: " + err.Error()
		}
	}
	if err := dropAmbient(); err != nil {
		req.report(keeperStatus{Error: err.Error()})
		return 125
	}
	writes, err := restrictWrites(req.Writable, !req.HostSockets)
	if err != nil {
		req.report(keeperStatus{Error: "confining the command's writes: " + err.Error()})
		return 125
	}
	if err := cmd.Start(); err != nil {
		req.report(keeperStatus{Error: err.Error()})
		return 126
	}
	st.Writes = writes
	req.report(st)
	return 0
}

// closeOnExecFrom marks every descriptor from fd on close-on-exec, so
// that the command gets only what it is given, not what this program
// inherited.
func closeOnExecFrom(fd int) {
	if unix.CloseRange(uint(fd), math.MaxUint32, unix.CLOSE_RANGE_CLOEXEC) == nil {
		return
	}
	// Kernels before 5.11.
	entries, _ := os.ReadDir("/proc/self/fd")
	for _, e := range entries {
		if n, err := strconv.Atoi(e.Name()); err == nil && n >= fd {
			syscall.CloseOnExec(n)
		}
	}
}

// report answers the request; a requester gone has nobody to tell.
func (req *confineRequest) report(st keeperStatus) {
	data, _ := json.Marshal(st)
	_, _ = req.status.Write(data)
}
