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
	"strconv"
	"sync"
	"syscall"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	pluginv1 "github.com/troupe-dev/troupe/sdk/wire/proto/troupe/plugin/v1"
)

// laneCall is one socket the other side opened, and its call in flight,
// if any.
type laneCall struct {
	conn      net.Conn
	mu        sync.Mutex
	cancel    context.CancelFunc // the call in flight's
	cancelled bool               // a call was cancelled: the socket is done
}

// begin makes cancel the call in flight's, and reports false when the
// other side has cancelled already.
func (c *laneCall) begin(cancel context.CancelFunc) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cancelled {
		return false
	}
	c.cancel = cancel
	return true
}

func (c *laneCall) end() {
	c.mu.Lock()
	c.cancel = nil
	c.mu.Unlock()
}

func (c *laneCall) stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cancelled = true
	if c.cancel != nil {
		c.cancel()
	}
}

// serve reads the control socket until it closes, takes the sockets the
// other side opens and answers their calls with handle, each on the
// goroutine that read it, and cancels the calls the other side cancels.
// When the control socket closes, the calls in flight are cancelled and
// their sockets closed; serve returns once they have returned. It closes
// the control socket as it returns, whatever ended it: an end that no
// longer reads it must not leave the other side's messages waiting.
func (p *peer) serve(handle handler) error {
	var wg sync.WaitGroup
	rd := &controlReader{ctl: p.ctl, buf: make([]byte, 0, 64*laneMsgSize), oob: make([]byte, syscall.CmsgSpace(4*maxControlFDs))}
	defer func() {
		_ = p.ctl.Close()
		closeFDs(rd.held)
		p.mu.Lock()
		for _, c := range p.served {
			c.stop()
			_ = c.conn.Close()
		}
		p.mu.Unlock()
		wg.Wait()
	}()
	for {
		msgs, err := rd.read()
		for _, m := range msgs {
			p.control(&wg, m, handle)
		}
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
				return nil
			}
			return err
		}
	}
}

// control acts on one control message the other side sent, and closes
// the descriptors that came with it that it does not take: only a
// laneNew takes one, its socket.
func (p *peer) control(wg *sync.WaitGroup, m controlMsg, handle handler) {
	fds := m.fds
	switch {
	case m.kind == laneNew && len(fds) > 0:
		p.accept(wg, m.id, fds[0], handle)
		fds = fds[1:]
	case m.kind == laneCancel:
		p.mu.Lock()
		c := p.served[m.id]
		p.mu.Unlock()
		if c != nil {
			c.stop()
		}
	}
	closeFDs(fds)
}

// accept serves the socket fd as the other side's socket id, unless that
// number is served already or maxServedLaneConns are: then the socket is
// closed, and the other side's call on it fails.
func (p *peer) accept(wg *sync.WaitGroup, id uint32, fd int, handle handler) {
	f := os.NewFile(uintptr(fd), "lane")
	p.mu.Lock()
	_, dup := p.served[id]
	full := len(p.served) >= maxServedLaneConns
	p.mu.Unlock()
	if dup || full {
		_ = f.Close()
		return
	}
	conn, err := net.FileConn(f)
	_ = f.Close()
	if err != nil {
		return
	}
	c := &laneCall{conn: conn}
	p.mu.Lock() // only this goroutine adds: the checks above still hold
	p.served[id] = c
	p.mu.Unlock()
	wg.Go(func() {
		serveLaneConn(c, handle, p.takeTrace)
		p.mu.Lock()
		delete(p.served, id)
		p.mu.Unlock()
	})
}

// maxControlFDs is how many descriptors one read of the control socket
// takes; a message that carries more is truncated (MSG_CTRUNC), which
// breaks the lane.
const maxControlFDs = 8

// errControlTruncated: the other side sent more descriptors at once than
// the lane carries; which message they came with can no longer be told.
var errControlTruncated = errors.New("lane: a control message carried more descriptors than a lane takes")

// A controlMsg is one message of the control socket, and the
// descriptors that came with it.
type controlMsg struct {
	kind byte
	id   uint32
	fds  []int
}

// controlReader reads the control socket's messages, each with the
// descriptors that came with it. A read of a Unix stream socket ends
// with the message whose descriptors it brings (Linux stops a read
// there), so they belong to the message the read ended in.
type controlReader struct {
	ctl  *net.UnixConn
	buf  []byte // a message not yet whole
	held []int  // the descriptors that came with it
	oob  []byte
	msgs []controlMsg
}

// read reads what the control socket has, and returns the messages that
// are now whole. A truncated read closes the descriptors it brought and
// fails with errControlTruncated.
func (r *controlReader) read() ([]controlMsg, error) {
	n, oobn, flags, _, err := r.ctl.ReadMsgUnix(r.buf[len(r.buf):cap(r.buf)], r.oob)
	fds := receivedFDs(r.oob[:max(oobn, 0)])
	if flags&syscall.MSG_CTRUNC != 0 {
		closeFDs(fds)
		return nil, errControlTruncated
	}
	r.buf = r.buf[:len(r.buf)+max(n, 0)]
	whole := len(r.buf) / laneMsgSize
	endsWhole := len(r.buf)%laneMsgSize == 0
	r.msgs = r.msgs[:0]
	for i := range whole {
		b := r.buf[i*laneMsgSize:]
		m := controlMsg{kind: b[0], id: binary.BigEndian.Uint32(b[1:laneMsgSize])}
		if i == 0 {
			m.fds, r.held = r.held, nil
		}
		if i == whole-1 && endsWhole {
			m.fds, fds = append(m.fds, fds...), nil
		}
		r.msgs = append(r.msgs, m)
	}
	r.buf = r.buf[:copy(r.buf, r.buf[whole*laneMsgSize:])]
	if len(r.buf) > 0 {
		r.held = append(r.held, fds...)
	} else {
		closeFDs(fds)
	}
	return r.msgs, err
}

// receivedFDs are the descriptors a control message carried.
func receivedFDs(oob []byte) []int {
	if len(oob) == 0 {
		return nil
	}
	msgs, err := syscall.ParseSocketControlMessage(oob)
	if err != nil {
		return nil
	}
	var fds []int
	for i := range msgs {
		rights, err := syscall.ParseUnixRights(&msgs[i])
		if err != nil {
			continue
		}
		for _, fd := range rights {
			syscall.CloseOnExec(fd)
		}
		fds = append(fds, rights...)
	}
	return fds
}

func closeFDs(fds []int) {
	for _, fd := range fds {
		_ = syscall.Close(fd)
	}
}

// serveLaneConn answers the calls of one socket, one at a time, each on
// this goroutine, until the other side closes it or cancels a call. With
// takeTrace, a call's trace context is its context's remote parent.
func serveLaneConn(c *laneCall, handle handler, takeTrace bool) {
	defer c.conn.Close()
	r := bufio.NewReader(c.conn)
	var rbuf, wbuf []byte
	for {
		payload, err := readFrame(r, &rbuf)
		if err != nil || len(payload) == 0 {
			return
		}
		ctx, cancel := context.WithCancel(context.Background())
		if !c.begin(cancel) {
			cancel()
			return
		}
		var resp proto.Message
		ctx, method, body, err := untrace(ctx, payload, takeTrace)
		if err == nil {
			resp, err = handle(ctx, method, body)
		}
		c.end()
		cancel()
		if wbuf = answer(c.conn, wbuf, resp, err); wbuf == nil {
			return
		}
		if cap(rbuf) > keptBuffer {
			rbuf = nil
		}
	}
}

// untrace splits a request's payload into its method and message. The
// trace context a traced request carries is taken off it and, with take,
// made ctx's remote parent.
func untrace(ctx context.Context, payload []byte, take bool) (context.Context, byte, []byte, error) {
	method, body := payload[0], payload[1:]
	if method&laneTraced == 0 {
		return ctx, method, body, nil
	}
	th, body, ok := cutLaneTrace(body)
	if !ok {
		return ctx, 0, nil, status.Error(codes.InvalidArgument, "lane: a request's trace context is malformed")
	}
	if take {
		ctx = withRemoteTrace(ctx, th)
	}
	return ctx, method &^ laneTraced, body, nil
}

// answer writes a call's answer as a frame to conn: resp, or err's
// status, or ResourceExhausted in resp's place when it is larger than the
// protocol allows. It returns the buffer it used, or nil when the write
// failed.
func answer(conn net.Conn, buf []byte, resp proto.Message, err error) []byte {
	if err == nil {
		if n := proto.Size(resp); n+1 > MaxMessageSize {
			err = status.Errorf(codes.ResourceExhausted, "the answer is %d bytes; at most %d cross", n, MaxMessageSize)
		}
	}
	if err != nil {
		st := status.Convert(err)
		buf = append(buf[:0], 0, 0, 0, 0, byte(st.Code()))
		buf = append(buf, st.Message()...)
		binary.BigEndian.PutUint32(buf, uint32(len(buf)-4))
	} else if buf, err = appendFrame(append(buf[:0], 0, 0, 0, 0, byte(codes.OK)), resp); err != nil {
		return nil
	}
	if _, err := conn.Write(buf); err != nil {
		return nil
	}
	if cap(buf) > keptBuffer {
		return buf[:0:0]
	}
	return buf
}

// Lane is the host's end of a plugin's lane. It is safe for concurrent
// use.
type Lane struct {
	p *peer
}

// NewLane makes a lane, and returns the file the plugin gets as its end:
// pass it in the plugin's cmd.ExtraFiles, with EnvLaneFD naming its
// descriptor, and close it once the plugin has started.
func NewLane() (*Lane, *os.File, error) {
	ctl, end, err := socketPair()
	if err != nil {
		return nil, nil, err
	}
	p, err := newPeer(ctl)
	if err != nil {
		_ = end.Close()
		return nil, nil, err
	}
	return &Lane{p: p}, end, nil
}

// CallTool calls the plugin's CallTool on the lane. Its errors are gRPC
// status errors, as the Plugin client's are.
func (l *Lane) CallTool(ctx context.Context, req *pluginv1.CallToolRequest) (*pluginv1.CallToolResponse, error) {
	resp := &pluginv1.CallToolResponse{}
	if err := l.p.call(ctx, laneCallTool, req, resp); err != nil {
		return nil, err
	}
	return resp, nil
}

// CarryTrace makes the lane's calls carry the trace context of their
// contexts' spans: call it once the plugin says it takes it
// (DescribeResponse.trace_context). A plugin that does not would fail
// such calls.
func (l *Lane) CarryTrace() { l.p.sendTrace.Store(true) }

// ServeHost answers with srv, on a goroutine of its own, the calls of the
// Host service that the plugin makes on the lane, until the lane closes.
// Say so to the plugin in each RunLoopRequest (host_lane).
func (l *Lane) ServeHost(srv pluginv1.HostServer) {
	go func() { _ = l.p.serve(hostHandler(srv)) }()
}

// Close closes the lane, and the sockets of its calls: a call in flight
// on the host's side fails, one on the plugin's side is cancelled.
func (l *Lane) Close() error { return l.p.close() }

// LaneServer is a plugin's end of its lane (see NewLane).
type LaneServer struct {
	p *peer
}

// LaneFromEnv takes the plugin's end of the lane the host passed it, if
// it passed one (EnvLaneFD); neither the descriptor nor the variable is
// passed on to the processes the plugin starts. It returns nil, and no
// error, when the host passed none.
func LaneFromEnv() (*LaneServer, error) {
	v, ok := os.LookupEnv(EnvLaneFD)
	if !ok {
		return nil, nil
	}
	_ = os.Unsetenv(EnvLaneFD)
	fd, err := strconv.Atoi(v)
	if err != nil || fd < 3 {
		return nil, fmt.Errorf("lane: %s=%q is not a descriptor", EnvLaneFD, v)
	}
	syscall.CloseOnExec(fd)
	return laneServerOf(os.NewFile(uintptr(fd), "lane"))
}

// laneServerOf is the plugin's end of the lane whose control socket is
// f, which it closes.
func laneServerOf(f *os.File) (*LaneServer, error) {
	p, err := peerOf(f)
	if err != nil {
		return nil, err
	}
	p.takeTrace = true
	return &LaneServer{p: p}, nil
}

// Serve answers the calls of CallTool the host makes on the lane with
// call, each on the goroutine that read it, with a context that the
// host's cancellation ends, and whose remote parent is the span context
// the host sent with the call, if it sent one. It returns once the host
// closes the lane.
func (s *LaneServer) Serve(call func(context.Context, *pluginv1.CallToolRequest) *pluginv1.CallToolResponse) error {
	return s.p.serve(func(ctx context.Context, method byte, b []byte) (proto.Message, error) {
		if method != laneCallTool {
			return nil, status.Errorf(codes.Unimplemented, "the plugin's lane has no method %d", method)
		}
		req := &pluginv1.CallToolRequest{}
		if err := proto.Unmarshal(b, req); err != nil {
			return nil, status.Error(codes.InvalidArgument, err.Error())
		}
		return call(ctx, req), nil
	})
}

// Host is a client of the host's Host service on the lane, for a host
// that serves it there.
func (s *LaneServer) Host() pluginv1.HostClient { return laneHost{s.p} }
