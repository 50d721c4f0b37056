package process

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// DefaultMaxOutput is how much of a command's output Run keeps when
// the command does not say.
const DefaultMaxOutput = 64 << 10

// stopGrace is how long a command's keeper has to end the command's
// tree after it is told to stop, before it is killed with its group.
const stopGrace = 10 * time.Second

// Sentinel errors of Run, for errors.Is. A command that is not found
// wraps exec.ErrNotFound.
var (
	// ErrInvalidCommand is wrapped when a Command cannot run as given.
	ErrInvalidCommand = errors.New("invalid command")
	// ErrNoKeeper is wrapped when Run is called in a program that has not
	// called ServeIfKeeper (Linux), so nothing could confine the command
	// or end what it leaves behind.
	ErrNoKeeper = errors.New("no keeper")
)

// Command is a command for Run: run once, to its end or its time limit,
// confined where the platform allows.
type Command struct {
	// Args are the command's words. Args[0] is looked up in the
	// absolute directories of Env's PATH unless it holds a path
	// separator; a relative path is taken from Dir.
	Args []string
	// Dir is the directory the command runs in; it must exist.
	Dir string
	// Env is the command's whole environment: build it with Env, so that
	// no API key reaches the command. Run adds nothing to it.
	Env []string
	// Timeout bounds the command's time; 0 leaves that to the context.
	Timeout time.Duration
	// MaxOutput bounds the output kept, in bytes; 0 means
	// DefaultMaxOutput.
	MaxOutput int
	// Writable are the directories beneath which the command may create,
	// change and remove files (its workspace, a private temporary
	// directory); everywhere else it may only read and execute, where
	// the platform can confine writes (Landlock). Each must exist.
	// Empty, the command may write nowhere but /dev/null.
	Writable []string
	// Visible are directories the command reads that may lie where the
	// host's sockets are hidden from a command without network (/tmp,
	// /run; see the package's documentation), such as the git directory
	// of a worktree it runs in: they stay in its sight, as its Writable
	// directories, its working directory and its PATH do. Each must
	// exist. Reading anywhere else needs nothing.
	Visible []string
	// Network lets the command reach the network and the host's
	// sockets; without it, the command runs with neither where the
	// platform can take them away (on Linux a network namespace of its
	// own, with only a loopback that is down, and the directories of the
	// host's sockets hidden: see the package's documentation).
	Network bool
}

// Confinement says which restrictions applied to a command.
type Confinement struct {
	// Network: the command ran with no network and out of reach of the
	// host's sockets (no network namespace alone, nor one with sockets
	// left in sight, counts).
	Network bool
	// Writes: the command could change files only beneath its Writable
	// directories.
	Writes bool
}

// Result is how a command went.
type Result struct {
	// ExitCode is the command's exit status (128 and the signal's number
	// when a signal ended it, as a shell says); -1 when Run killed it.
	ExitCode int
	// Output is the command's standard output and error, interleaved as
	// written. Past MaxOutput, only its head and tail are kept, with a
	// line between them that says how many bytes were cut.
	Output string
	// TimedOut is set when the command ran past its Timeout and was
	// killed, with everything it started.
	TimedOut bool
	// Duration is how long the command ran.
	Duration time.Duration
	// Confined says which restrictions applied.
	Confined Confinement
}

// errTimedOut is the cause of a command's context when its time is up.
var errTimedOut = errors.New("command timed out")

// Run runs a command to its end, with standard input from /dev/null, and
// ends every process it started when it exits, when its Timeout passes
// or when ctx is done.
//
// On Linux the command runs under a keeper (ServeIfKeeper; without one
// Run fails with ErrNoKeeper), which ends the processes it started
// wherever they went, even into a session of their own, and even when
// this program dies. The keeper confines the command as c asks where the
// kernel allows, and the Result says what applied. Elsewhere the command
// runs unconfined in a process group of its own, which is killed whole.
//
// A command that ran is a Result, whatever its exit status; it is also
// an error, wrapping ctx's, when ctx ended it.
func Run(ctx context.Context, c Command) (Result, error) {
	path, err := c.check()
	if err != nil {
		return Result{}, err
	}
	if ctx.Err() != nil {
		return Result{}, fmt.Errorf("%s: %w", c.Args[0], ended(ctx))
	}
	out := newCappedOutput(c.maxOutput())
	runCtx, cancel := context.WithCancel(ctx)
	if c.Timeout > 0 {
		runCtx, cancel = context.WithTimeoutCause(ctx, c.Timeout, errTimedOut)
	}
	defer cancel()
	begun := time.Now()
	s, err := start(&c, path, out)
	if err != nil {
		return Result{}, fmt.Errorf("starting %s: %w", c.Args[0], err)
	}
	exited := make(chan struct{})
	stopped := make(chan bool, 1)
	go func() { stopped <- s.stopWhenDone(runCtx, exited) }()
	confined, readyErr := s.ready()
	waitErr := s.cmd.Wait()
	s.finish()
	close(exited)
	res := Result{
		ExitCode: s.cmd.ProcessState.ExitCode(),
		Output:   out.String(),
		Duration: time.Since(begun),
		Confined: confined,
	}
	wasStopped := <-stopped
	if wasStopped {
		res.ExitCode = -1
		res.TimedOut = context.Cause(runCtx) == errTimedOut
	}
	switch {
	case wasStopped && !res.TimedOut:
		return res, fmt.Errorf("%s: %w", c.Args[0], ended(ctx))
	case readyErr != nil && !wasStopped:
		return Result{}, fmt.Errorf("starting %s: %w", c.Args[0], readyErr)
	case waitErr != nil && !isExit(waitErr):
		return res, fmt.Errorf("%s: %w", c.Args[0], waitErr)
	}
	return res, nil
}

// ended is why ctx is done: its error, and its cause when that says
// more.
func ended(ctx context.Context) error {
	err := ctx.Err()
	if cause := context.Cause(ctx); cause != nil && cause != err {
		return fmt.Errorf("%w: %w", err, cause)
	}
	return err
}

// stopWhenDone stops the command when ctx is done before it has exited,
// and kills it with its group if it is still there after stopGrace. It
// reports whether it stopped it.
func (s *started) stopWhenDone(ctx context.Context, exited <-chan struct{}) bool {
	select {
	case <-exited:
		return false
	case <-ctx.Done():
	}
	s.stop()
	grace := time.NewTimer(stopGrace)
	defer grace.Stop()
	select {
	case <-exited:
	case <-grace.C:
		s.kill()
	}
	return true
}

// isExit reports whether Wait's error only says how the command exited,
// or that a process left behind held its output past the keeper's end.
func isExit(err error) bool {
	var ee *exec.ExitError
	return errors.As(err, &ee) || errors.Is(err, exec.ErrWaitDelay)
}

// check validates c and returns the path of the program it runs.
func (c *Command) check() (string, error) {
	if len(c.Args) == 0 || c.Args[0] == "" {
		return "", fmt.Errorf("%w: no program to run; give its name as Args[0]", ErrInvalidCommand)
	}
	if c.Timeout < 0 || c.MaxOutput < 0 {
		return "", fmt.Errorf("%w: Timeout and MaxOutput may not be negative (0 takes the default)", ErrInvalidCommand)
	}
	if err := isDir(c.Dir, "Dir"); err != nil {
		return "", err
	}
	for _, dir := range c.Writable {
		if err := isDir(dir, "a Writable directory"); err != nil {
			return "", err
		}
	}
	for _, dir := range c.Visible {
		if err := isDir(dir, "a Visible directory"); err != nil {
			return "", err
		}
	}
	return lookPath(c.Args[0], c.Env, c.Dir)
}

// isDir checks that path names an existing directory by an absolute
// path.
func isDir(path, what string) error {
	if !filepath.IsAbs(path) {
		return fmt.Errorf("%w: %s is %q; give an absolute path", ErrInvalidCommand, what, path)
	}
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrInvalidCommand, what, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("%w: %s, %s, is not a directory", ErrInvalidCommand, what, path)
	}
	return nil
}

func (c *Command) maxOutput() int {
	if c.MaxOutput == 0 {
		return DefaultMaxOutput
	}
	return c.MaxOutput
}
