//go:build unix

package wire

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// The lane carries the calls a loop or an agent makes most often beside
// gRPC, for speed: a gRPC call hands each message from goroutine to
// goroutine on both sides (a writer, a reader, a handler), which costs a
// round trip some thirty system calls and a dozen context switches. On
// the lane the caller writes its request and reads its answer itself, on
// a socket of its own, and the other side runs the call on the goroutine
// that read it.
//
// The host makes a socket pair and passes one end to the plugin as it
// starts it (EnvLaneFD). That pair, the control socket, carries messages
// of laneMsgSize bytes, a kind and a socket's number, either way:
// laneNew brings the other side a new socket (its descriptor rides
// along), one for each call in flight at once, which its sender keeps for
// later calls; laneCancel cancels the call in flight on a socket its
// sender opened, which the sender then closes. No path names these
// sockets: no other process can reach them. Each carries one call at a
// time, a frame each way, a frame being a 4-byte big-endian length and
// that many bytes: a request is a method (one of the lane* methods) and
// its request message; an answer is a gRPC status code, then the answer
// message when it is OK, or the status's message when it is not.
//
// The host calls the plugin's CallTool on the lane; the plugin calls the
// host's Host service on it for the loops it runs, when the host says it
// serves it (RunLoopRequest.host_lane).
//
// A call's trace context rides in its request frame when the host's end
// is told that the plugin takes it (Lane.CarryTrace) and the call is
// Traced (its context has a sampled span): the method then has
// laneTraced set, and the
// W3C traceparent and tracestate follow it, each a 2-byte big-endian
// length and that many bytes, before the request message. A call without
// one is framed as before, byte for byte; so is one whose frame would
// pass the limit with it (the trace context is left out, not the call).

// Kinds of the control socket's messages.
const (
	laneNew    byte = 'n'
	laneCancel byte = 'c'
)

// laneMsgSize is the size of a control message: its kind and a socket's
// number.
const laneMsgSize = 5

// The methods a lane carries.
const (
	laneCallTool     byte = 1 // Plugin.CallTool
	laneGenerate     byte = 2 // Host.Generate, and the rest of Host
	laneHostCallTool byte = 3
	laneTools        byte = 4
	laneNote         byte = 5
	laneAskParent    byte = 6
	laneEvent        byte = 7
)

// laneTraced, set in a request's method, says that the call's trace
// context follows the method.
const laneTraced byte = 0x80

// maxLaneTrace bounds each header of a call's trace context on a lane.
const maxLaneTrace = 1024

// maxIdleLaneConns bounds the sockets a lane keeps between calls.
const maxIdleLaneConns = 16

// maxLaneConns bounds the sockets one end has open at once, for calls
// in flight and kept; a call past it waits for one. maxServedLaneConns
// bounds the other side's sockets an end serves at once: more are
// closed as they come. It leaves room for sockets the other side closed
// that this end has not yet seen close.
const (
	maxLaneConns       = 128
	maxServedLaneConns = 2 * maxLaneConns
)

// keptBuffer bounds the buffers a socket keeps between calls.
const keptBuffer = 64 << 10

// handler answers one call that came over a lane: its method and its
// request message's bytes.
type handler func(ctx context.Context, method byte, req []byte) (proto.Message, error)

// peer is one end of a lane: it calls the other side on sockets it opens,
// and, once serving, answers the calls the other side makes on sockets
// that side opened. It is safe for concurrent use.
type peer struct {
	ctl  *net.UnixConn
	raw  syscall.RawConn // ctl's, for sends that never wait
	next atomic.Uint32   // the number of the next socket this end opens

	// idle are the sockets kept between calls; open holds a token for
	// each socket this end has open (see maxLaneConns); done is closed
	// with the lane.
	idle chan *laneConn
	open chan struct{}
	done chan struct{}

	mu     sync.Mutex
	closed bool
	served map[uint32]*laneCall // the other side's sockets, by number

	// sendTrace: this end's calls carry their trace context. takeTrace:
	// the calls this end serves get the trace context they carry as
	// their remote parent; an end that does not take it drops it.
	sendTrace atomic.Bool
	takeTrace bool
}

func newPeer(ctl *net.UnixConn) (*peer, error) {
	raw, err := ctl.SyscallConn()
	if err != nil {
		_ = ctl.Close()
		return nil, fmt.Errorf("lane: %w", err)
	}
	return &peer{ctl: ctl, raw: raw, served: map[uint32]*laneCall{},
		idle: make(chan *laneConn, maxIdleLaneConns),
		open: make(chan struct{}, maxLaneConns),
		done: make(chan struct{})}, nil
}

// laneConn is one socket this end opened, with its buffers.
type laneConn struct {
	id   uint32
	c    *net.UnixConn
	r    *bufio.Reader
	rbuf []byte
	wbuf []byte
}

// socketPair makes a connected pair of Unix sockets, neither inherited by
// the processes this one starts.
func socketPair() (*net.UnixConn, *os.File, error) {
	syscall.ForkLock.RLock()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err == nil {
		syscall.CloseOnExec(fds[0])
		syscall.CloseOnExec(fds[1])
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		return nil, nil, fmt.Errorf("lane: %w", err)
	}
	mine := os.NewFile(uintptr(fds[0]), "lane")
	c, err := net.FileConn(mine)
	_ = mine.Close()
	if err != nil {
		_ = syscall.Close(fds[1])
		return nil, nil, fmt.Errorf("lane: %w", err)
	}
	return c.(*net.UnixConn), os.NewFile(uintptr(fds[1]), "lane"), nil
}

// peerOf is the end of a lane whose control socket is f, which it closes.
func peerOf(f *os.File) (*peer, error) {
	c, err := net.FileConn(f)
	_ = f.Close()
	if err != nil {
		return nil, fmt.Errorf("lane: %w", err)
	}
	ctl, ok := c.(*net.UnixConn)
	if !ok {
		_ = c.Close()
		return nil, errors.New("lane: not a Unix socket")
	}
	return newPeer(ctl)
}

// call makes one call of method on the lane, and reads its answer into
// resp. Its errors are gRPC status errors, as a gRPC client's are: a call
// whose ctx ended fails with ctx's code, a request too large with
// ResourceExhausted, and a lane that broke (the other side exited), or
// whose other side does not read it (ErrLaneBusy), with Unavailable.
func (p *peer) call(ctx context.Context, method byte, req, resp proto.Message) error {
	if err := ctx.Err(); err != nil {
		return status.FromContextError(err).Err()
	}
	n := proto.Size(req)
	if n+1 > MaxMessageSize {
		return status.Errorf(codes.ResourceExhausted, "the request is %d bytes; at most %d cross", n, MaxMessageSize)
	}
	var th *traceHeaders
	if p.sendTrace.Load() {
		th = laneTrace(ctx, MaxMessageSize-1-n)
	}
	c, err := p.get(ctx)
	if err != nil {
		return err
	}
	// A call whose ctx ends is left at once, and cancelled on the other
	// side when the control socket has room: a cancel that cannot be sent
	// is dropped, and the other side finds the socket closed when it
	// answers.
	stop := context.AfterFunc(ctx, func() {
		_ = c.c.SetDeadline(time.Unix(1, 0))
		_ = p.send(laneMsg(laneCancel, c.id), nil)
	})
	err = c.roundtrip(method, th, req, resp)
	if !stop() {
		p.discard(c)
		if err != nil || ctx.Err() != nil {
			return status.FromContextError(ctx.Err()).Err()
		}
		return nil
	}
	if err != nil {
		p.discard(c)
		if _, ok := status.FromError(err); ok {
			return err
		}
		return status.Error(codes.Unavailable, "the lane broke: "+err.Error())
	}
	p.put(c)
	return nil
}

// get returns a kept socket, or opens one, waiting while this end has
// maxLaneConns open. Its errors are gRPC status errors.
func (p *peer) get(ctx context.Context) (*laneConn, error) {
	select {
	case c := <-p.idle:
		return c, nil
	default:
	}
	select {
	case c := <-p.idle:
		return c, nil
	case p.open <- struct{}{}:
	case <-p.done:
		return nil, status.Error(codes.Unavailable, "the lane is closed")
	case <-ctx.Done():
		return nil, status.FromContextError(ctx.Err()).Err()
	}
	c, err := p.dial()
	if err != nil {
		<-p.open
		if errors.Is(err, ErrLaneBusy) {
			return nil, busyError{}
		}
		return nil, status.Error(codes.Unavailable, err.Error())
	}
	return c, nil
}

// dial opens a socket and sends it to the other side.
func (p *peer) dial() (*laneConn, error) {
	mine, theirs, err := socketPair()
	if err != nil {
		return nil, err
	}
	defer theirs.Close()
	id := p.next.Add(1)
	if err := p.send(laneMsg(laneNew, id), syscall.UnixRights(int(theirs.Fd()))); err != nil {
		_ = mine.Close()
		if errors.Is(err, ErrLaneBusy) {
			return nil, err
		}
		return nil, fmt.Errorf("the lane broke: %w", err)
	}
	return &laneConn{id: id, c: mine, r: bufio.NewReader(mine)}, nil
}

// send writes a control message, with the rights in oob, without ever
// waiting: the control socket is non-blocking, and one the other side
// has stopped reading fails the send with ErrLaneBusy once it is full,
// so that no caller waits on it past its context's end. A message is a
// few bytes, sent whole or not at all; one sent in part leaves the
// control socket out of step, and closes it.
func (p *peer) send(msg, oob []byte) error {
	var n int
	var serr error
	if err := p.raw.Write(func(fd uintptr) bool {
		n, serr = syscall.SendmsgN(int(fd), msg, oob, nil, 0)
		return true // never wait for room
	}); err != nil {
		return err
	}
	switch {
	case errors.Is(serr, syscall.EAGAIN):
		return ErrLaneBusy
	case serr != nil:
		return serr
	case n < len(msg):
		_ = p.ctl.Close()
		return io.ErrShortWrite
	}
	return nil
}

// put keeps c for a later call, or closes it when enough are kept.
func (p *peer) put(c *laneConn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.closed {
		select {
		case p.idle <- c:
			return
		default:
		}
	}
	p.discard(c)
}

// discard closes c, which this end opened.
func (p *peer) discard(c *laneConn) {
	_ = c.c.Close()
	<-p.open
}

// close closes the lane and the idle sockets this end opened; a call in
// flight ends when the other side does, or closes its socket when it
// returns. The other side's sockets end when it closes them.
func (p *peer) close() error {
	p.mu.Lock()
	if !p.closed {
		p.closed = true
		close(p.done)
	}
	p.mu.Unlock()
	for {
		select {
		case c := <-p.idle:
			p.discard(c)
		default:
			return p.ctl.Close()
		}
	}
}

// busyError is ErrLaneBusy as a gRPC status error: Unavailable.
type busyError struct{}

func (busyError) Error() string        { return ErrLaneBusy.Error() }
func (busyError) Is(target error) bool { return target == ErrLaneBusy }
func (busyError) GRPCStatus() *status.Status {
	return status.New(codes.Unavailable, ErrLaneBusy.Error())
}

// laneMsg is a control message.
func laneMsg(kind byte, id uint32) []byte {
	b := make([]byte, laneMsgSize)
	b[0] = kind
	binary.BigEndian.PutUint32(b[1:], id)
	return b
}

// roundtrip sends a request of method, with the trace context th when it
// is not nil, and reads its answer into resp.
func (c *laneConn) roundtrip(method byte, th *traceHeaders, req, resp proto.Message) error {
	var err error
	c.wbuf = append(c.wbuf[:0], 0, 0, 0, 0, method)
	if th != nil {
		c.wbuf[4] |= laneTraced
		c.wbuf = appendLaneString(appendLaneString(c.wbuf, th.parent), th.state)
	}
	if c.wbuf, err = appendFrame(c.wbuf, req); err != nil {
		return err
	}
	if _, err := c.c.Write(c.wbuf); err != nil {
		return err
	}
	payload, err := readFrame(c.r, &c.rbuf)
	if err != nil {
		return err
	}
	if len(payload) == 0 {
		return errors.New("an empty answer")
	}
	if code := codes.Code(payload[0]); code != codes.OK {
		return status.Error(code, string(payload[1:]))
	}
	if err := proto.Unmarshal(payload[1:], resp); err != nil {
		return err
	}
	if cap(c.rbuf) > keptBuffer {
		c.rbuf = nil
	}
	if cap(c.wbuf) > keptBuffer {
		c.wbuf = nil
	}
	return nil
}

// laneTrace is the trace context of ctx's span as a lane carries it in
// a frame that has room bytes beside its method and message, or nil when
// ctx has none or it does not fit. A trace state longer than a lane
// carries, or than the frame has room for, is left out (W3C Trace Context
// lets a state be dropped); a trace context that does not fit at all is
// left out too: the call is not, and a frame past the limit would fail
// it, since the other side refuses such frames.
func laneTrace(ctx context.Context, room int) *traceHeaders {
	if !Traced(ctx) {
		return nil // before h, which lives on the heap
	}
	h, ok := traceOf(ctx)
	if !ok || len(h.parent) > maxLaneTrace || laneTraceSize(h.parent, "") > room {
		return nil
	}
	if len(h.state) > maxLaneTrace || laneTraceSize(h.parent, h.state) > room {
		h.state = ""
	}
	return &h
}

// laneTraceSize is what a trace context takes of a frame.
func laneTraceSize(parent, state string) int { return 2 + len(parent) + 2 + len(state) }

// appendLaneString appends s to b, after its length in 2 bytes.
func appendLaneString(b []byte, s string) []byte {
	return append(binary.BigEndian.AppendUint16(b, uint16(len(s))), s...)
}

// cutLaneTrace reads the trace context that a traced request carries
// before its message, and returns it and the message.
func cutLaneTrace(b []byte) (h traceHeaders, msg []byte, ok bool) {
	parent, b, ok := cutLaneString(b)
	if !ok {
		return h, nil, false
	}
	state, b, ok := cutLaneString(b)
	if !ok {
		return h, nil, false
	}
	return traceHeaders{parent: string(parent), state: string(state)}, b, true
}

func cutLaneString(b []byte) (s, rest []byte, ok bool) {
	if len(b) < 2 {
		return nil, nil, false
	}
	n := int(binary.BigEndian.Uint16(b))
	if n > maxLaneTrace || len(b) < 2+n {
		return nil, nil, false
	}
	return b[2 : 2+n], b[2+n:], true
}

// appendFrame appends m to b, whose first 4 bytes are the frame's length,
// and sets that length.
func appendFrame(b []byte, m proto.Message) ([]byte, error) {
	b, err := proto.MarshalOptions{}.MarshalAppend(b, m)
	if err != nil {
		return nil, err
	}
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b, nil
}

// errFrameTooLarge is a frame longer than MaxMessageSize allows.
var errFrameTooLarge = errors.New("lane: a frame is larger than the protocol allows")

// frameChunk bounds what readFrame allocates ahead of the bytes that
// arrive: a frame's length is the other side's word, not its bytes.
const frameChunk = 64 << 10

// readFrame reads one frame's payload into *buf, which grows as the
// payload arrives.
func readFrame(r *bufio.Reader, buf *[]byte) ([]byte, error) {
	var head [4]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return nil, err
	}
	size := binary.BigEndian.Uint32(head[:])
	if size > MaxMessageSize+1 {
		return nil, errFrameTooLarge
	}
	n := int(size)
	b := (*buf)[:0]
	for len(b) < n {
		chunk := min(n-len(b), frameChunk)
		b = slices.Grow(b, chunk)
		got, err := io.ReadFull(r, b[len(b):len(b)+chunk])
		b = b[:len(b)+got]
		if err != nil {
			*buf = b
			return nil, err
		}
	}
	*buf = b
	return b, nil
}
