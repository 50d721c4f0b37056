package mcp

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/builtin/process"
)

// Bounds on a stdio server.
const (
	// maxLine bounds one message from a server.
	maxLine = 8 << 20
	// stderrKept is how much of a server's standard error is kept for
	// the message when it fails to start.
	stderrKept = 4 << 10
	// exitGrace is how long a server has to exit once its input closed,
	// then once its keeper was told to stop, before it is killed.
	exitGrace = 2 * time.Second
)

// A stdioProcess is a stdio server's process: its keeper and the pipes
// to the server.
type stdioProcess struct {
	cmd    *exec.Cmd
	toSrv  *os.File // the server's standard input
	fromSv *os.File // its standard output
	stderr *tail
	exited chan struct{}
}

// startStdio starts s's command under a keeper, with troupe's scrubbed
// environment plus s's own variables.
func startStdio(s agenttypes.MCPServer, environ []string) (*stdioProcess, error) {
	vars, err := expand(s, "env", s.Env, environ)
	if err != nil {
		return nil, err
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	cmd := exec.Command(s.Command, s.Args...)
	cmd.Env = process.Env(environ, envEntries(vars)...)
	p := &stdioProcess{toSrv: inW, fromSv: outR, stderr: &tail{max: stderrKept}, exited: make(chan struct{})}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, p.stderr
	p.cmd = process.Kept(cmd)
	err = p.cmd.Start()
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, fmt.Errorf("%w: %s: %v; check its command", ErrStart, describe(s), err)
	}
	go func() {
		_ = p.cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

func (p *stdioProcess) transport() mcpsdk.Transport {
	return &mcpsdk.IOTransport{Reader: p.fromSv, Writer: p.toSrv, MaxLineLength: maxLine}
}

// stop ends the server: its input is closed, as the protocol asks; a
// server that does not exit is stopped with its keeper, which ends the
// whole tree, and at last killed with its group.
func (p *stdioProcess) stop(ctx context.Context) {
	p.toSrv.Close()
	p.fromSv.Close()
	if p.waitExit(ctx) {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	if p.waitExit(ctx) {
		return
	}
	_ = process.KillGroup(p.cmd.Process.Pid)
	<-p.exited
}

func (p *stdioProcess) waitExit(ctx context.Context) bool {
	t := time.NewTimer(exitGrace)
	defer t.Stop()
	select {
	case <-p.exited:
		return true
	case <-ctx.Done():
		return false
	case <-t.C:
		return false
	}
}

// stderrTail is what the server wrote to its standard error, for a
// message, or "".
func (p *stdioProcess) stderrTail() string {
	s := strings.TrimSpace(p.stderr.String())
	if s == "" {
		return ""
	}
	return "; it wrote: " + s
}

// tail keeps the last max bytes written to it.
type tail struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append(t.b[:0], t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}
