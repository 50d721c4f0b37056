package devserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
)

const (
	// BinEnv names the environment variable that holds the Temporal CLI's
	// path; make integration sets it.
	BinEnv = "TROUPE_TEMPORAL_BIN"
	// StartTimeout bounds Start's wait for the server to serve.
	StartTimeout = 60 * time.Second

	loopback     = "127.0.0.1"
	namespace    = "default"
	outputLimit  = 64 << 10
	stopTimeout  = 10 * time.Second
	probeTimeout = 2 * time.Second
	pollInterval = 50 * time.Millisecond
)

// ErrNotServing says a server did not come to serve: it exited first, or
// did not answer within the caller's bound.
var ErrNotServing = errors.New("devserver: the Temporal dev server did not serve")

// errPortTaken marks a start that failed because a port chosen free was
// taken before the server bound it; such a start is tried once more.
var errPortTaken = errors.New("a port was taken before the server bound it")

// Options say how to run a server.
type Options struct {
	// Bin is the Temporal CLI to run.
	Bin string
	// Dir is the server's working directory and its home, so that what
	// the CLI writes under its home (an identifier for the cluster) lands
	// there and not in the user's.
	Dir string
	// Logger receives the SDK client's log while Launch waits for the
	// server; nil discards it.
	Logger *slog.Logger
}

// Server is a running dev server.
type Server struct {
	hostPort string
	pid      int
	out      *tail
	exited   chan struct{}
	waitErr  error // set before exited is closed
	stopOnce sync.Once
	stopErr  error
}

// Start starts a server for t and stops it when t ends, logging its
// output if t failed. It skips t when BinEnv is not set.
func Start(t testing.TB) *Server {
	t.Helper()
	bin := os.Getenv(BinEnv)
	if bin == "" {
		t.Skip(BinEnv + " is not set: `make integration` builds the Temporal CLI and sets it")
	}
	ctx, cancel := context.WithTimeout(t.Context(), StartTimeout)
	defer cancel()
	s, err := Launch(ctx, Options{Bin: bin, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Error(err)
		}
		if t.Failed() {
			t.Logf("the Temporal dev server's output:\n%s", s.Output())
		}
	})
	return s
}

// Launch starts a server and returns once it serves, or with an error
// that holds its output when it did not serve before ctx ended. The
// server outlives ctx: Stop ends it.
func Launch(ctx context.Context, opts Options) (*Server, error) {
	if err := opts.check(); err != nil {
		return nil, err
	}
	s, err := launch(ctx, opts)
	if errors.Is(err, errPortTaken) {
		s, err = launch(ctx, opts)
	}
	return s, err
}

func (o Options) check() error {
	info, err := os.Stat(o.Bin)
	if err != nil {
		return fmt.Errorf("devserver: the Temporal CLI: %w; `make integration` builds it", err)
	}
	if info.IsDir() || info.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("devserver: the Temporal CLI %s is not an executable file; `make integration` builds it", o.Bin)
	}
	if info, err := os.Stat(o.Dir); err != nil || !info.IsDir() {
		return fmt.Errorf("devserver: Options.Dir %q must name an existing directory for the server to run in", o.Dir)
	}
	return nil
}

func launch(ctx context.Context, opts Options) (*Server, error) {
	ports, err := freePorts(3)
	if err != nil {
		return nil, err
	}
	s := &Server{
		hostPort: net.JoinHostPort(loopback, strconv.Itoa(ports[0])),
		out:      newTail(outputLimit),
		exited:   make(chan struct{}),
	}
	cmd := exec.Command(opts.Bin, "server", "start-dev", "--headless",
		"--ip", loopback,
		"--port", strconv.Itoa(ports[0]),
		"--http-port", strconv.Itoa(ports[1]),
		"--metrics-port", strconv.Itoa(ports[2]))
	cmd.Env = serverEnv(opts.Dir)
	cmd.Dir = opts.Dir
	cmd.Stdout, cmd.Stderr = s.out, s.out
	if err := startGroup(cmd); err != nil {
		return nil, fmt.Errorf("devserver: start %s: %w", opts.Bin, err)
	}
	s.pid = cmd.Process.Pid
	go func() {
		s.waitErr = cmd.Wait()
		close(s.exited)
	}()
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if err := s.waitServing(ctx, logger); err != nil {
		return nil, errors.Join(err, s.Stop())
	}
	return s, nil
}

// serverEnv is all of the environment the server gets: nothing of the
// caller's (no API keys, no TEMPORAL_* settings) but PATH and TMPDIR.
func serverEnv(home string) []string {
	env := []string{"HOME=" + home, "PATH=" + os.Getenv("PATH")}
	if tmp, ok := os.LookupEnv("TMPDIR"); ok {
		env = append(env, "TMPDIR="+tmp)
	}
	return env
}

// freePorts returns n loopback ports that were free a moment ago.
func freePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			_ = ln.Close()
		}
	}()
	for range n {
		ln, err := net.Listen("tcp", net.JoinHostPort(loopback, "0"))
		if err != nil {
			return nil, fmt.Errorf("devserver: find a free loopback port: %w", err)
		}
		lns = append(lns, ln)
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// waitServing polls the server until it serves, it exits, or ctx ends.
func (s *Server) waitServing(ctx context.Context, logger *slog.Logger) error {
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		last := s.probe(ctx, logger)
		if last == nil {
			return nil
		}
		select {
		case <-s.exited:
			out := s.out.String()
			err := fmt.Errorf("%w: it exited (%v) before it served on %s; its output:\n%s", ErrNotServing, s.waitErr, s.hostPort, out)
			if strings.Contains(out, "address already in use") {
				err = fmt.Errorf("%w (%w)", err, errPortTaken)
			}
			return err
		case <-ctx.Done():
			return fmt.Errorf("%w on %s before %w (last check: %v); its output:\n%s", ErrNotServing, s.hostPort, context.Cause(ctx), last, s.out.String())
		case <-tick.C:
		}
	}
}

// probe is one health check: the SDK client connects, the frontend's
// health service says it serves, and the namespace is known.
func (s *Server) probe(ctx context.Context, logger *slog.Logger) error {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	c, err := client.DialContext(ctx, client.Options{
		HostPort:  s.hostPort,
		Namespace: namespace,
		Logger:    sdklog.NewStructuredLogger(logger),
	})
	if err != nil {
		return err
	}
	defer c.Close()
	if _, err := c.CheckHealth(ctx, &client.CheckHealthRequest{}); err != nil {
		return err
	}
	_, err = c.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: namespace})
	return err
}

// HostPort is the frontend's gRPC address, "127.0.0.1:PORT".
func (s *Server) HostPort() string { return s.hostPort }

// Namespace is the namespace the server made at start, "default".
func (s *Server) Namespace() string { return namespace }

// Pid is the server's process id, which is also its process group's.
func (s *Server) Pid() int { return s.pid }

// Output is the last of what the server wrote (64 KiB at most).
func (s *Server) Output() string { return s.out.String() }

// Stop kills the server's process group, waits for the server to exit and
// checks that no process of the group is left. Calls after the first
// return the first's result.
func (s *Server) Stop() error {
	s.stopOnce.Do(func() { s.stopErr = s.stop() })
	return s.stopErr
}
