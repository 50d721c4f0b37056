// Command troupe-temporal is the troupe command's Temporal helper: the
// troupe binary does not link Temporal, and runs this one, the way git
// runs git-foo, for the two commands that need a cluster.
//
//	troupe-temporal run    --address HOST:PORT --root DIR [--namespace N] [--task-queue Q] [--checkout C]
//	troupe-temporal worker --address HOST:PORT --root DIR [--namespace N] [--task-queue Q] [--checkout C]
//
// run takes one top-level agent on stdin (stepwire's run protocol), runs
// it as a workflow and sends its tree's events and how it ended back on
// stdout. worker runs a Temporal worker whose steps it asks the troupe
// process at the other end of stdin and stdout to run (stepwire.Client);
// it stops when stdin closes. Stdout carries the protocol only; logs go
// to stderr.
//
// Both ignore SIGINT: a terminal's Ctrl-C reaches the whole process group,
// and the troupe process decides what it means (a cancel sent on the
// pipe, which this process must live to carry out and report). SIGTERM
// ends them.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"

	"github.com/troupe-dev/troupe/manager"
	"github.com/troupe-dev/troupe/manager/stepwire"
	"github.com/troupe-dev/troupe/manager/temporal"
)

// dialTimeout bounds connecting to the cluster: an address where nothing
// answers fails within it, naming the address.
const dialTimeout = 10 * time.Second

// Exit statuses: 2 for a command line that is wrong.
const (
	exitOK     = 0
	exitFailed = 1
	exitUsage  = 2
)

const usage = `usage:
  troupe-temporal run    --address HOST:PORT --root DIR [--namespace N] [--task-queue Q] [--checkout C]
  troupe-temporal worker --address HOST:PORT --root DIR [--namespace N] [--task-queue Q] [--checkout C]
The troupe command runs these ('troupe run --temporal', 'troupe worker'); stdin and stdout carry its protocol.
`

func main() {
	signal.Ignore(syscall.SIGINT)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// options are the flags both commands take.
type options struct {
	address, namespace, taskQueue, root, checkout, logLevel string
}

// run runs the command line args and returns the exit status.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 || (args[0] != "run" && args[0] != "worker") {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	opts, err := parse(args[0], args[1:], stderr)
	if err != nil {
		fmt.Fprintf(stderr, "troupe-temporal %s: %v\n%s", args[0], err, usage)
		return exitUsage
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: opts.level()}))
	if args[0] == "run" {
		return serveRun(ctx, opts, logger, stdin, stdout)
	}
	return serveWorker(ctx, opts, logger, stdin, stdout)
}

func parse(name string, args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("troupe-temporal "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.address, "address", "", "the Temporal frontend's address, HOST:PORT")
	fs.StringVar(&o.namespace, "namespace", client.DefaultNamespace, "the Temporal namespace")
	fs.StringVar(&o.taskQueue, "task-queue", temporal.DefaultTaskQueue, "the task queue runs go to")
	fs.StringVar(&o.root, "root", "", "the project checkout runs are made from, or served")
	fs.StringVar(&o.checkout, "checkout", "", "the checkout's commit; empty: any")
	fs.StringVar(&o.logLevel, "log-level", "info", "debug, info, warn or error")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	switch {
	case fs.NArg() > 0:
		return o, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	case o.root == "":
		return o, errors.New("--root is missing: give the project checkout")
	}
	if err := checkAddress(o.address); err != nil {
		return o, err
	}
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(o.logLevel)); err != nil {
		return o, fmt.Errorf("--log-level %q: use debug, info, warn or error", o.logLevel)
	}
	return o, nil
}

// checkAddress refuses an address that is not HOST:PORT.
func checkAddress(addr string) error {
	if addr == "" {
		return errors.New("--address is missing: give the Temporal frontend's HOST:PORT, such as 127.0.0.1:7233")
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil || host == "" {
		return fmt.Errorf("--address %q is not HOST:PORT; give one such as 127.0.0.1:7233", addr)
	}
	if n, err := strconv.Atoi(port); err != nil || n <= 0 || n > 65535 {
		return fmt.Errorf("--address %q: the port must be a number from 1 to 65535", addr)
	}
	return nil
}

func (o options) level() slog.Level {
	var lv slog.Level
	_ = lv.UnmarshalText([]byte(o.logLevel))
	return lv
}

// dial connects to the cluster within dialTimeout.
func dial(ctx context.Context, o options, logger *slog.Logger) (client.Client, error) {
	dctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	c, err := client.DialContext(dctx, client.Options{
		HostPort:  o.address,
		Namespace: o.namespace,
		Logger:    sdklog.NewStructuredLogger(logger),
	})
	if err != nil {
		return nil, fmt.Errorf("cannot reach the Temporal cluster at %s (namespace %s): %w; is the cluster running there? ('temporal server start-dev' starts one to try it out)",
			o.address, o.namespace, err)
	}
	return c, nil
}

// serveRun runs the one run read from stdin on the cluster.
func serveRun(ctx context.Context, o options, logger *slog.Logger, stdin io.Reader, stdout io.Writer) int {
	var b manager.Backend
	c, err := dial(ctx, o, logger)
	if err == nil {
		defer c.Close()
		b, err = temporal.New(temporal.Config{Client: c, TaskQueue: o.taskQueue, Root: o.root, Checkout: o.checkout, Logger: logger})
	}
	if err != nil {
		// Said to the troupe process as why the run could not be run.
		b = failed{err}
	}
	if err := stepwire.ServeRun(ctx, stdin, stdout, b); err != nil {
		logger.Error("serving the run", "err", err)
		return exitFailed
	}
	return exitOK
}

// failed is a backend that could not be made: it runs nothing, and says
// why.
type failed struct{ err error }

func (f failed) Run(context.Context, manager.RemoteRun) (manager.RemoteOutcome, error) {
	return manager.RemoteOutcome{}, f.err
}

// serveWorker runs a worker whose steps the process at the other end of
// stdin and stdout runs, until stdin closes or ctx ends.
func serveWorker(ctx context.Context, o options, logger *slog.Logger, stdin io.Reader, stdout io.Writer) int {
	c, err := dial(ctx, o, logger)
	if err != nil {
		logger.Error(err.Error())
		return exitFailed
	}
	defer c.Close()
	steps := stepwire.NewClient(stdin, stdout)
	w, err := temporal.NewWorker(c, temporal.WorkerConfig{Steps: steps, TaskQueue: o.taskQueue, Root: o.root, Checkout: o.checkout})
	if err == nil {
		err = w.Start()
	}
	if err != nil {
		logger.Error("starting the worker", "err", err)
		return exitFailed
	}
	logger.Info("worker started", "address", o.address, "namespace", o.namespace, "task_queue", o.taskQueue, "checkout", o.checkout)
	select {
	case <-steps.Done():
		logger.Info("the step pipe closed; stopping the worker")
	case <-ctx.Done():
		logger.Info("told to stop; stopping the worker")
	}
	w.Stop()
	return exitOK
}
