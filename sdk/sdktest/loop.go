package sdktest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/troupe-dev/troupe/sdk"
)

// loopTimeout is how long one run of a loop may take.
var loopTimeout = 10 * time.Second

// concurrentRuns is how many runs of a loop go on at once.
const concurrentRuns = 4

// TestLoop runs CheckLoop in a test and reports each problem with
// t.Error.
func TestLoop(t testing.TB, loop sdk.Loop, scripts ...Script) {
	t.Helper()
	report(t, CheckLoop(loop, scripts...))
}

// CheckLoop runs loop against fake Sessions playing each script (or one
// empty script when none is given), as the package documentation
// describes, and returns nil or an error that lists every problem found
// (errors.Join of one error each).
//
// Each script is played as written, and must succeed with its Want; then
// with no tools offered; with the Session's Generate refusing with
// sdk.ErrBudgetExceeded from each of the model calls the scripted run made
// on, and CallTool from each of its tool calls on, when the run must end
// with that error wrapped; with Generate failing, Tools failing, the
// context cancelled before the run and during each model call; and
// several times at once.
func CheckLoop(loop sdk.Loop, scripts ...Script) error {
	if loop == nil {
		return errors.New("sdktest: loop: the loop is nil")
	}
	if len(scripts) == 0 {
		scripts = []Script{{Task: "sdktest task"}}
	}
	var errs []error
	for _, s := range scripts {
		c := &loopCheck{loop: loop, script: s}
		c.run()
		errs = append(errs, c.errs...)
	}
	return errors.Join(errs...)
}

type loopCheck struct {
	loop   sdk.Loop
	script Script

	mu   sync.Mutex
	errs []error
}

func (c *loopCheck) errorf(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.errs = append(c.errs, fmt.Errorf("sdktest: loop, %s: "+format, append([]any{c.script.name()}, args...)...))
}

// outcome is how one run went.
type outcome struct {
	output   string
	err      error
	panicked any
	nilResp  bool
	hung     bool
}

// runLoop runs the loop on s in a goroutine and waits up to wait for it.
// It closes s when the run returns.
func runLoop(ctx context.Context, loop sdk.Loop, s *Session, wait time.Duration) outcome {
	ch := make(chan outcome, 1)
	go func() {
		var o outcome
		defer func() {
			if p := recover(); p != nil {
				o = outcome{panicked: p}
			}
			s.Close()
			ch <- o
		}()
		resp, err := loop.Run(ctx, s, s.script.request())
		o.err = err
		switch {
		case err != nil:
		case resp == nil:
			o.nilResp = true
		default:
			o.output = resp.Output
		}
	}()
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case o := <-ch:
		return o
	case <-timer.C:
		return outcome{hung: true}
	}
}

// play runs the loop once on s under loopTimeout, reports what any run
// must not do, and says whether the run returned properly.
func (c *loopCheck) play(what string, s *Session) (outcome, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), loopTimeout)
	defer cancel()
	o := runLoop(ctx, c.loop, s, loopTimeout+cancelGrace)
	return o, c.sane(what, s, o)
}

func (c *loopCheck) sane(what string, s *Session, o outcome) bool {
	for _, v := range s.Violations() {
		c.errorf("%s: %s", what, v)
	}
	switch {
	case o.panicked != nil:
		c.errorf("%s: Run panicked with %v; return an error instead", what, o.panicked)
	case o.hung:
		c.errorf("%s: Run did not return", what)
	case o.nilResp:
		c.errorf("%s: Run returned a nil *RunResponse and a nil error", what)
	default:
		return true
	}
	return false
}

func (c *loopCheck) run() {
	s := NewSession(c.script)
	o, ok := c.play("the scripted run", s)
	if !ok {
		return
	}
	if o.err != nil {
		c.errorf("the scripted run: want no error, got %v", o.err)
	}
	for _, w := range c.script.Want {
		if o.err == nil && !strings.Contains(o.output, w) {
			c.errorf("the scripted run: want %q in the output %s", w, abbrev(o.output))
		}
	}
	models, calls := len(s.Requests()), len(s.Calls())
	if models == 0 {
		c.errorf("the scripted run: the loop never called Session.Generate")
	}

	c.noTools()
	for i := range models {
		c.budget(fmt.Sprintf("model call %d refused for the budget", i+1), func(s *Session) {
			s.generateFault = from(i, sdk.Errorf(sdk.CodeBudgetExceeded, "sdktest: the token budget is used up"))
		})
		c.fails(fmt.Sprintf("model call %d failing", i+1), func(s *Session) {
			s.generateFault = from(i, sdk.Errorf(sdk.CodeInternal, "sdktest: the model failed"))
		})
		c.cancelDuring(i)
	}
	for i := range calls {
		c.budget(fmt.Sprintf("tool call %d refused for the budget", i+1), func(s *Session) {
			s.toolFault = from(i, sdk.Errorf(sdk.CodeBudgetExceeded, "sdktest: the tool-call budget is used up"))
		})
	}
	c.toolsFail()
	c.cancelBefore()
	c.concurrent()
}

// from returns a fault that fails call n and every later one with err.
func from(n int, err error) func(context.Context, int) error {
	return func(_ context.Context, k int) error {
		if k >= n {
			return err
		}
		return nil
	}
}

func (c *loopCheck) noTools() {
	script := c.script
	script.Tools = nil
	c.play("with no tools offered", NewSession(script))
}

func (c *loopCheck) budget(what string, fault func(*Session)) {
	s := NewSession(c.script)
	fault(s)
	o, ok := c.play(what, s)
	if !ok {
		return
	}
	switch {
	case o.err == nil:
		c.errorf("%s: Run succeeded; it must end with the Session's error, wrapped, so the host sees the budget", what)
	case !errors.Is(o.err, sdk.ErrBudgetExceeded):
		c.errorf("%s: Run's error %q does not wrap the Session's sdk.ErrBudgetExceeded; wrap it with %%w", what, o.err)
	}
}

func (c *loopCheck) fails(what string, fault func(*Session)) {
	s := NewSession(c.script)
	fault(s)
	o, ok := c.play(what, s)
	if ok && o.err == nil {
		c.errorf("%s: Run succeeded; it must return an error when the model fails", what)
	}
}

func (c *loopCheck) toolsFail() {
	s := NewSession(c.script)
	s.toolsFault = sdk.Errorf(sdk.CodeUnavailable, "sdktest: the host could not list the tools")
	c.play("with Session.Tools failing", s)
}

func (c *loopCheck) cancelBefore() {
	const what = "with a cancelled context"
	s := NewSession(c.script)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	o := runLoop(ctx, c.loop, s, cancelGrace)
	if o.hung {
		c.errorf("%s: Run did not return within %v", what, cancelGrace)
		return
	}
	if c.sane(what, s, o) && o.err == nil {
		c.errorf("%s: Run succeeded; it must return an error", what)
	}
}

// cancelDuring cancels the run while its model call n is under way: the
// call waits for the context, as a slow model would.
func (c *loopCheck) cancelDuring(n int) {
	what := fmt.Sprintf("cancelled during model call %d", n+1)
	s := NewSession(c.script)
	entered := make(chan struct{})
	var once sync.Once
	s.generateFault = func(ctx context.Context, k int) error {
		if k != n {
			return nil
		}
		once.Do(func() { close(entered) })
		<-ctx.Done()
		return ctx.Err()
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := make(chan outcome, 1)
	go func() { ch <- runLoop(ctx, c.loop, s, loopTimeout) }()
	select {
	case <-entered:
	case o := <-ch:
		if c.sane(what, s, o) {
			c.errorf("%s: Run returned before it made that call, unlike the scripted run", what)
		}
		return
	case <-time.After(loopTimeout):
		c.errorf("%s: Run did not make the call within %v", what, loopTimeout)
		return
	}
	cancel()
	select {
	case o := <-ch:
		if c.sane(what, s, o) && o.err == nil {
			c.errorf("%s: Run succeeded; it must return an error", what)
		}
	case <-time.After(cancelGrace):
		c.errorf("%s: Run did not return within %v of its context being cancelled; it must honour ctx", what, cancelGrace)
	}
}

func (c *loopCheck) concurrent() {
	var wg sync.WaitGroup
	var once sync.Once
	for range concurrentRuns {
		wg.Go(func() {
			const what = "run several times at once"
			s := NewSession(c.script)
			o, ok := c.play(what, s)
			if ok && o.err != nil {
				once.Do(func() { c.errorf("%s: want no error, got %v", what, o.err) })
			}
		})
	}
	wg.Wait()
}
