package main

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/troupe-dev/troupe/manager"
	"github.com/troupe-dev/troupe/manager/stepwire"
)

// helperEnv, set, makes the test binary the helper itself.
const helperEnv = "TEMPORAL_TROUPE_HELPER_TEST"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		main()
		return
	}
	goleak.VerifyTestMain(m)
}

// helperCmdEnv is the helper's whole environment in these tests: the
// race detector's exit delay off, and the switch that makes the test
// binary the helper.
func helperCmdEnv() []string {
	return []string{helperEnv + "=1", "GORACE=atexit_sleep_ms=0", "PATH=" + os.Getenv("PATH")}
}

func TestBadCommandLinesExitTwo(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct {
		args []string
		want string
	}{
		{nil, "usage:"},
		{[]string{"serve"}, "usage:"},
		{[]string{"run", "--root", dir}, "--address is missing: give the Temporal frontend's HOST:PORT"},
		{[]string{"worker", "--root", dir, "--address", "localhost"}, `--address "localhost" is not HOST:PORT`},
		{[]string{"worker", "--root", dir, "--address", "127.0.0.1:99999"}, "the port must be a number from 1 to 65535"},
		{[]string{"worker", "--address", "127.0.0.1:7233"}, "--root is missing"},
		{[]string{"run", "--root", dir, "--address", "127.0.0.1:7233", "--log-level", "loud"}, `--log-level "loud"`},
		{[]string{"run", "--root", dir, "--address", "127.0.0.1:7233", "extra"}, `unexpected argument "extra"`},
	} {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), tt.args, strings.NewReader(""), &stdout, &stderr)
		if code != exitUsage || !strings.Contains(stderr.String(), tt.want) || stdout.Len() != 0 {
			t.Errorf("%v: exit %d, stderr %q, stdout %q; want exit 2 and %q on stderr only", tt.args, code, stderr.String(), stdout.String(), tt.want)
		}
	}
}

// closedAddr is a loopback address where nothing listens.
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}

// A run handed to a helper that cannot reach the cluster fails with an
// error that names the address, sent back on the run's pipe.
func TestRunNamesTheAddressItCannotReach(t *testing.T) {
	addr := closedAddr(t)
	var stderr bytes.Buffer
	p := &stepwire.Process{Path: os.Args[0], Args: []string{"run", "--address", addr, "--root", t.TempDir()}, Env: helperCmdEnv(), Stderr: &stderr}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := p.Run(ctx, manager.RemoteRun{ID: "a1", Type: "explore", Task: "x", Publish: func(manager.Event) {}})
	if err == nil || !strings.Contains(err.Error(), "cannot reach the Temporal cluster at "+addr+" (namespace default)") {
		t.Fatalf("err = %v; want one naming %s", err, addr)
	}
}

// A terminal's Ctrl-C reaches the helper too; it lives on, since the
// troupe process decides what the interrupt means, and SIGTERM ends it.
func TestSIGINTIsIgnoredAndSIGTERMEnds(t *testing.T) {
	// A listener that takes the connection and never answers: the
	// helper waits there, dialing, once it has set its signals up.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	cmd := exec.Command(os.Args[0], "worker", "--address", ln.Addr().String(), "--root", t.TempDir())
	cmd.Env = helperCmdEnv()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill() }()
	conn, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// Standard signals pending together are delivered lowest first: the
	// helper sees SIGINT before SIGTERM.
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the helper did not end within 30 s of SIGTERM")
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			t.Fatalf("the helper was killed by %v; stderr:\n%s", ws.Signal(), stderr.String())
		}
	}
	if !strings.Contains(stderr.String(), "cannot reach the Temporal cluster at "+ln.Addr().String()) {
		t.Errorf("the helper ended without saying it stopped dialing; stderr:\n%s", stderr.String())
	}
}
