package stepwire

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/troupe-dev/troupe/manager"
	"github.com/troupe-dev/troupe/sdk/fault"
)

// Steps across a pipe: a process that holds no manager (a Temporal worker
// started by the troupe command, say) asks, with a Client, the process
// that holds one to run each step, which it does with Serve. Frames are
// JSON lines, each at most MaxFrame bytes; a step's frame carries its ID,
// and a request and its answer may interleave with others.

// MaxFrame bounds one frame: a long conversation goes into every step's
// input.
const MaxFrame = 64 << 20

// frame is one line of the protocol.
type frame struct {
	ID     uint64          `json:"id"`
	Step   string          `json:"step,omitempty"`
	Input  *Input          `json:"input,omitempty"`
	Output json.RawMessage `json:"output,omitempty"`
	Error  *fault.Error    `json:"error,omitempty"`
	// Cancel asks the server to stop the step with ID.
	Cancel bool `json:"cancel,omitempty"`
}

// ErrClosed is returned by a Client's steps once its pipe is closed.
var ErrClosed = errors.New("step pipe closed")

// Serve runs the steps read from r with s, several at once, and writes
// each one's answer to w, until r ends or a frame cannot be read; then it
// cancels the steps under way, waits for them, and returns. Ending ctx
// cancels the steps; to stop Serve, end ctx and close r.
func Serve(ctx context.Context, r io.Reader, w io.Writer, s Stepper) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	out := &frameWriter{w: w}
	var mu sync.Mutex
	running := map[uint64]context.CancelFunc{}
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	err := readFrames(ctx, r, func(f frame) {
		mu.Lock()
		defer mu.Unlock()
		if f.Cancel {
			if stop := running[f.ID]; stop != nil {
				stop()
			}
			return
		}
		sctx, stop := context.WithCancel(ctx)
		running[f.ID] = stop
		wg.Add(1)
		go func() {
			defer wg.Done()
			answer := runStep(sctx, s, f)
			mu.Lock()
			delete(running, f.ID)
			mu.Unlock()
			stop()
			_ = out.write(answer)
		}()
	})
	if errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

// runStep runs the step a frame asks for and returns the answer's frame.
func runStep(ctx context.Context, s Stepper, f frame) (answer frame) {
	answer.ID = f.ID
	defer func() {
		if p := recover(); p != nil {
			answer.Output, answer.Error = nil, fault.Errorf(fault.Internal, "step %s panicked: %v", f.Step, p)
		}
	}()
	if f.Input == nil {
		answer.Error = fault.Errorf(fault.InvalidArgument, "step %s has no input", f.Step)
		return answer
	}
	var out any
	var err error
	switch f.Step {
	case StepStart:
		out, err = s.Start(ctx, *f.Input)
	case StepGenerate:
		out, err = s.Generate(ctx, *f.Input)
	case StepAnswer:
		out, err = s.Answer(ctx, *f.Input)
	case StepTools:
		out, err = s.Tools(ctx, *f.Input)
	case StepTree:
		out, err = s.Tree(ctx, *f.Input)
	case StepQuestion:
		out, err = s.Question(ctx, *f.Input)
	case StepCloseWorkspace:
		out, err = s.CloseWorkspace(ctx, *f.Input)
	default:
		err = fault.Errorf(fault.InvalidArgument, "no step %q", f.Step)
	}
	if err != nil {
		answer.Error = Fault(err).(*fault.Error)
		return answer
	}
	b, err := json.Marshal(out)
	switch {
	case err != nil:
		answer.Error = fault.Errorf(fault.Internal, "step %s: encoding its result: %v", f.Step, err)
	case len(b) > MaxFrame-1024:
		answer.Error = fault.Errorf(fault.ResponseTooLarge, "step %s: its result of %d bytes is larger than a frame may be (%d)", f.Step, len(b), MaxFrame)
	default:
		answer.Output = b
	}
	return answer
}

// readFrames calls fn with each frame read from r until it ends (io.EOF)
// or fails.
func readFrames(ctx context.Context, r io.Reader, fn func(frame)) error {
	err := readLines(r, "step", func(f frame) bool {
		if ctx.Err() != nil {
			return false
		}
		fn(f)
		return true
	})
	if err == nil { // stopped by ctx
		return ctx.Err()
	}
	return err
}

// readLines calls fn with each JSON line read from r, decoded, until fn
// returns false, r ends (io.EOF) or a line cannot be read; what names the
// lines in errors.
func readLines[T any](r io.Reader, what string, fn func(T) bool) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), MaxFrame)
	for sc.Scan() {
		var f T
		if err := json.Unmarshal(sc.Bytes(), &f); err != nil {
			return fmt.Errorf("reading a %s frame: %w", what, err)
		}
		if !fn(f) {
			return nil
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return fmt.Errorf("a %s frame is longer than %d bytes", what, MaxFrame)
		}
		return err
	}
	return io.EOF
}

// frameWriter writes whole frames, one at a time.
type frameWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (fw *frameWriter) write(f any) error {
	b, err := json.Marshal(f)
	if err != nil {
		return err
	}
	if len(b) > MaxFrame {
		return fmt.Errorf("a frame of %d bytes is longer than %d", len(b), MaxFrame)
	}
	b = append(b, '\n')
	fw.mu.Lock()
	defer fw.mu.Unlock()
	_, err = fw.w.Write(b)
	return err
}

// Client runs steps on the Serve at the other end of a pipe.
type Client struct {
	out     *frameWriter
	mu      sync.Mutex
	next    uint64
	waiting map[uint64]chan frame
	closed  chan struct{}
	err     error
}

var _ Stepper = (*Client)(nil)

// NewClient returns a Client that writes requests to w and reads answers
// from r until r ends; then every step waiting and every later one fails
// with ErrClosed.
func NewClient(r io.Reader, w io.Writer) *Client {
	c := &Client{out: &frameWriter{w: w}, waiting: map[uint64]chan frame{}, closed: make(chan struct{})}
	go c.read(r)
	return c
}

func (c *Client) read(r io.Reader) {
	err := readFrames(context.Background(), r, func(f frame) {
		c.mu.Lock()
		ch := c.waiting[f.ID]
		delete(c.waiting, f.ID)
		c.mu.Unlock()
		if ch != nil {
			ch <- f
		}
	})
	c.mu.Lock()
	c.err = err
	c.mu.Unlock()
	close(c.closed)
}

// Done is closed when the pipe's reading end has closed.
func (c *Client) Done() <-chan struct{} { return c.closed }

// call sends a step and decodes its answer into out.
func (c *Client) call(ctx context.Context, step string, in Input, out any) error {
	ch := make(chan frame, 1)
	c.mu.Lock()
	c.next++
	id := c.next
	c.waiting[id] = ch
	c.mu.Unlock()
	forget := func() {
		c.mu.Lock()
		delete(c.waiting, id)
		c.mu.Unlock()
	}
	if err := c.out.write(frame{ID: id, Step: step, Input: &in}); err != nil {
		forget()
		return fmt.Errorf("%w: %w", ErrClosed, err)
	}
	select {
	case f := <-ch:
		if f.Error != nil {
			return f.Error
		}
		return json.Unmarshal(f.Output, out)
	case <-ctx.Done():
		forget()
		_ = c.out.write(frame{ID: id, Cancel: true})
		return ctx.Err()
	case <-c.closed:
		forget()
		return ErrClosed
	}
}

func (c *Client) Start(ctx context.Context, in Input) (out StartOut, err error) {
	return out, c.call(ctx, StepStart, in, &out)
}

func (c *Client) Generate(ctx context.Context, in Input) (out GenerateOut, err error) {
	return out, c.call(ctx, StepGenerate, in, &out)
}

func (c *Client) Answer(ctx context.Context, in Input) (out AnswerOut, err error) {
	return out, c.call(ctx, StepAnswer, in, &out)
}

func (c *Client) Tools(ctx context.Context, in Input) (out ToolsOut, err error) {
	return out, c.call(ctx, StepTools, in, &out)
}

func (c *Client) Tree(ctx context.Context, in Input) (out TreeOut, err error) {
	return out, c.call(ctx, StepTree, in, &out)
}

func (c *Client) Question(ctx context.Context, in Input) (out manager.QuestionAnswer, err error) {
	return out, c.call(ctx, StepQuestion, in, &out)
}

func (c *Client) CloseWorkspace(ctx context.Context, in Input) (out CloseOut, err error) {
	return out, c.call(ctx, StepCloseWorkspace, in, &out)
}
