package script

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/troupe-dev/troupe/agenttypes"
)

// Runner runs compiled scripts: in the host process (InProcess) or in a
// script host child process (the default). It is the seam where a
// transport plugs in.
type Runner interface {
	// Load compiles p so that calls can use it. A script that does not
	// compile gives a *CompileError.
	Load(ctx context.Context, p *Program) error
	// Call runs one function of p, which Load accepted. An error wraps
	// agenttypes.ErrScript when the script failed rather than answered,
	// or is ctx's error when ctx ended first.
	Call(ctx context.Context, p *Program, c *Call) (Reply, error)
	// Close stops whatever the runner started.
	Close() error
}

// errCallTimeout is the cause of a call's context when the per-call limit
// ends it.
var errCallTimeout = errors.New("script call timeout")

// stoppedError says why a call's context ended, for a script that was
// stopped.
func stoppedError(ctx context.Context, fn string, limit time.Duration) error {
	return stopReason(errors.Is(context.Cause(ctx), errCallTimeout), ctx, fn, limit)
}

// stopReason says why a call was stopped: by the per-call limit, or by
// its context, which a deadline (the agent's time budget) or a
// cancellation ended.
func stopReason(timedOut bool, ctx context.Context, fn string, limit time.Duration) error {
	switch {
	case timedOut:
		return fmt.Errorf("%w: %s ran past the per-call limit of %s (an endless loop?) and was stopped", agenttypes.ErrScript, fn, limit)
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return fmt.Errorf("%w: %s ran past the agent's time budget and was stopped", agenttypes.ErrScript, fn)
	}
	return ctx.Err()
}

// InProcess runs scripts in the calling process: fast, but a script that
// recurses without end or allocates without bound takes the whole process
// down with it, since Go cannot recover from either. A script that loops
// is stopped when its call's context ends. Only an operator should choose
// it, for types whose scripts they trust.
type InProcess struct {
	// Timeout caps one call, and the evaluation of a script's top-level
	// declarations; 0 means DefaultCallTimeout.
	Timeout time.Duration

	mu    sync.Mutex
	pools map[string][]*instance // program ID → idle interpreters
	known map[string]*Program
}

// DefaultCallTimeout is how long one hook or tool call may run.
const DefaultCallTimeout = 10 * time.Second

// maxIdle caps the idle interpreters kept per program.
const maxIdle = 8

var _ Runner = (*InProcess)(nil)

func (r *InProcess) timeout() time.Duration {
	if r.Timeout > 0 {
		return r.Timeout
	}
	return DefaultCallTimeout
}

// Load compiles p once and keeps the interpreter for the first call.
func (r *InProcess) Load(ctx context.Context, p *Program) error {
	inst, err := compile(ctx, p, r.timeout())
	if err != nil {
		return err
	}
	r.put(inst)
	return nil
}

func (r *InProcess) put(inst *instance) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.pools == nil {
		r.pools, r.known = map[string][]*instance{}, map[string]*Program{}
	}
	r.known[inst.prog.ID] = inst.prog
	if len(r.pools[inst.prog.ID]) < maxIdle {
		r.pools[inst.prog.ID] = append(r.pools[inst.prog.ID], inst)
	}
}

func (r *InProcess) get(ctx context.Context, p *Program) (*instance, error) {
	r.mu.Lock()
	if pool := r.pools[p.ID]; len(pool) > 0 {
		inst := pool[len(pool)-1]
		r.pools[p.ID] = pool[:len(pool)-1]
		r.mu.Unlock()
		return inst, nil
	}
	r.mu.Unlock()
	return compile(ctx, p, r.timeout())
}

// Call runs one function in an interpreter of its own; a call that runs
// past its context or the per-call limit is stopped and its interpreter
// dropped.
//
// The call runs on the caller's goroutine, with a timer and the
// context's AfterFunc armed to stop the interpreter: no goroutine or
// channel per call. A program that may wait in a channel operation,
// which a stop does not end, runs on a goroutine of its own instead, so
// that the caller can leave it behind.
func (r *InProcess) Call(ctx context.Context, p *Program, c *Call) (Reply, error) {
	if ctx.Err() != nil {
		return Reply{}, stopReason(false, ctx, c.Fn, r.timeout())
	}
	inst, err := r.get(ctx, p)
	if err != nil {
		return Reply{}, fmt.Errorf("%w: %w", agenttypes.ErrScript, err)
	}
	if inst.blocks {
		return r.callAside(ctx, inst, c)
	}
	return r.callHere(ctx, inst, c)
}

// The states of a watch.
const (
	watchIdle int32 = iota
	watchRunning
	watchStopping // a timer or the context stops the interpreter
)

// watch stops an instance's interpreter when a call made on the caller's
// goroutine runs past its limit or its context. Whichever of the call's
// end and a stop moves the state off watchRunning first decides how the
// call ends.
type watch struct {
	state    atomic.Int32
	timedOut atomic.Bool   // the per-call limit stopped it, not the context
	halted   chan struct{} // closed once the stop is done
	timer    *time.Timer   // reused from call to call
	onCancel func()
}

// halt stops inst for a call that is still running; it is a timer's or a
// context's AfterFunc, on a goroutine of its own.
func (inst *instance) halt(timedOut bool) {
	w := &inst.watch
	if !w.state.CompareAndSwap(watchRunning, watchStopping) {
		return
	}
	w.timedOut.Store(timedOut)
	inst.stop()
	close(w.halted)
}

func (r *InProcess) callHere(ctx context.Context, inst *instance, c *Call) (Reply, error) {
	w := &inst.watch
	if w.timer == nil {
		w.halted = make(chan struct{})
		w.onCancel = func() { inst.halt(false) }
		w.state.Store(watchRunning)
		w.timer = time.AfterFunc(r.timeout(), func() { inst.halt(true) })
	} else {
		w.state.Store(watchRunning)
		w.timer.Reset(r.timeout())
	}
	var stopCtx func() bool
	if ctx.Done() != nil {
		stopCtx = context.AfterFunc(ctx, w.onCancel)
	}
	rep, err := inst.call(c)
	if w.state.CompareAndSwap(watchRunning, watchIdle) {
		// A timer or AfterFunc that fired anyway may be on its way to
		// halt: the instance is not used again, so it cannot stop a
		// later call.
		clean := w.timer.Stop()
		if stopCtx != nil && !stopCtx() {
			clean = false
		}
		if err == nil && clean {
			r.put(inst)
		} else {
			inst.state.close()
		}
		return rep, err
	}
	<-w.halted
	if stopCtx != nil {
		stopCtx()
	}
	w.timer.Stop()
	inst.state.close()
	return Reply{}, stopReason(w.timedOut.Load(), ctx, c.Fn, r.timeout())
}

// callAside runs a call on a goroutine of its own and leaves it behind
// when it does not end after its interpreter is stopped.
func (r *InProcess) callAside(ctx context.Context, inst *instance, c *Call) (Reply, error) {
	ctx, cancel := context.WithTimeoutCause(ctx, r.timeout(), errCallTimeout)
	defer cancel()
	type result struct {
		r   Reply
		err error
	}
	done := make(chan result, 1)
	go func() {
		rep, err := inst.call(c)
		done <- result{rep, err}
	}()
	select {
	case res := <-done:
		if res.err == nil {
			r.put(inst)
		}
		return res.r, res.err
	case <-ctx.Done():
		inst.stop()
		// A script parked in a channel operation does not notice the
		// stop; it is left behind rather than waited on forever.
		select {
		case <-done:
			inst.state.close()
		case <-time.After(time.Second):
		}
		return Reply{}, stoppedError(ctx, c.Fn, r.timeout())
	}
}

// Close drops the idle interpreters.
func (r *InProcess) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, pool := range r.pools {
		for _, inst := range pool {
			inst.state.close()
		}
	}
	r.pools = nil
	return nil
}
