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
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	pluginv1 "github.com/troupe-dev/troupe/sdk/wire/proto/troupe/plugin/v1"
)

// The lane carries tool calls beside gRPC, for speed: a gRPC call hands
// each message from goroutine to goroutine on both sides (a writer, a
// reader, a handler), which costs a round trip some thirty system calls
// and a dozen context switches. On the lane the caller writes its request
// and reads its answer itself, on a socket of its own, and the plugin
// runs the call on the goroutine that read it.
//
// The host makes a socket pair and passes one end to the plugin as it
// starts it (EnvLaneFD). That pair, the control socket, carries messages
// of laneMsgSize bytes, a kind and a socket's number: laneNew, which
// brings the plugin a new socket (its descriptor rides along), one for
// each call in flight at once, which the host keeps for later calls; and
// laneCancel, which cancels the call in flight on a socket, which the host
// then closes. No path names these sockets: no other process can reach
// them. Each socket carries one call at a time, a frame each way, a frame
// being a 4-byte big-endian length and that many bytes of a
// CallToolRequest or a CallToolResponse.

// Kinds of the control socket's messages.
const (
	laneNew    byte = 'n'
	laneCancel byte = 'c'
)

// laneMsgSize is the size of a control message: its kind and a socket's
// number.
const laneMsgSize = 5

// Lane is the host's end of a plugin's lane. It is safe for concurrent
// use.
type Lane struct {
	ctl  *net.UnixConn // see laneNew and laneCancel
	next atomic.Uint32 // the number of the next socket

	mu     sync.Mutex
	idle   []*laneConn
	closed bool
}

// maxIdleLaneConns bounds the sockets a Lane keeps between calls.
const maxIdleLaneConns = 16

// laneConn is one socket of a lane, with its buffers.
type laneConn struct {
	id   uint32
	c    *net.UnixConn
	r    *bufio.Reader
	rbuf []byte
	wbuf []byte
}

// NewLane makes a lane, and returns the file the plugin gets as its end:
// pass it in the plugin's cmd.ExtraFiles, with EnvLaneFD naming its
// descriptor, and close it once the plugin has started.
func NewLane() (*Lane, *os.File, error) {
	ctl, end, err := socketPair()
	if err != nil {
		return nil, nil, err
	}
	return &Lane{ctl: ctl}, end, nil
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

// CallTool makes one call over the lane. Its errors are gRPC status
// errors, as the Plugin client's are: a call whose ctx ended fails with
// ctx's code, a request too large with ResourceExhausted, and a lane that
// broke (the plugin exited) with Unavailable.
func (l *Lane) CallTool(ctx context.Context, req *pluginv1.CallToolRequest) (*pluginv1.CallToolResponse, error) {
	if err := ctx.Err(); err != nil {
		return nil, status.FromContextError(err).Err()
	}
	if n := proto.Size(req); n > MaxMessageSize {
		return nil, status.Errorf(codes.ResourceExhausted, "the request is %d bytes; at most %d cross", n, MaxMessageSize)
	}
	c, err := l.get()
	if err != nil {
		return nil, status.Error(codes.Unavailable, err.Error())
	}
	// A call whose ctx ends is left at once, and cancelled in the plugin.
	stop := context.AfterFunc(ctx, func() {
		_ = c.c.SetDeadline(time.Unix(1, 0))
		_, _ = l.ctl.Write(laneMsg(laneCancel, c.id))
	})
	resp, err := c.roundtrip(req)
	if !stop() {
		_ = c.c.Close()
		if err != nil || ctx.Err() != nil {
			return nil, status.FromContextError(ctx.Err()).Err()
		}
		return resp, nil
	}
	if err != nil {
		_ = c.c.Close()
		return nil, status.Error(codes.Unavailable, "the plugin's lane broke: "+err.Error())
	}
	l.put(c)
	return resp, nil
}

func (l *Lane) get() (*laneConn, error) {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil, errors.New("the plugin's lane is closed")
	}
	if n := len(l.idle); n > 0 {
		c := l.idle[n-1]
		l.idle = l.idle[:n-1]
		l.mu.Unlock()
		return c, nil
	}
	l.mu.Unlock()
	mine, theirs, err := socketPair()
	if err != nil {
		return nil, err
	}
	defer theirs.Close()
	id := l.next.Add(1)
	if _, _, err := l.ctl.WriteMsgUnix(laneMsg(laneNew, id), syscall.UnixRights(int(theirs.Fd())), nil); err != nil {
		_ = mine.Close()
		return nil, fmt.Errorf("the plugin's lane broke: %w", err)
	}
	return &laneConn{id: id, c: mine, r: bufio.NewReader(mine)}, nil
}

// laneMsg is a control message.
func laneMsg(kind byte, id uint32) []byte {
	b := make([]byte, laneMsgSize)
	b[0] = kind
	binary.BigEndian.PutUint32(b[1:], id)
	return b
}

func (l *Lane) put(c *laneConn) {
	l.mu.Lock()
	if l.closed || len(l.idle) >= maxIdleLaneConns {
		l.mu.Unlock()
		_ = c.c.Close()
		return
	}
	l.idle = append(l.idle, c)
	l.mu.Unlock()
}

// Close closes the lane and its idle sockets; a call in flight ends when
// the plugin does, or closes its socket when it returns.
func (l *Lane) Close() error {
	l.mu.Lock()
	l.closed = true
	idle := l.idle
	l.idle = nil
	l.mu.Unlock()
	for _, c := range idle {
		_ = c.c.Close()
	}
	return l.ctl.Close()
}

func (c *laneConn) roundtrip(req *pluginv1.CallToolRequest) (*pluginv1.CallToolResponse, error) {
	var err error
	if c.wbuf, err = appendFrame(c.wbuf[:0], req); err != nil {
		return nil, err
	}
	if _, err := c.c.Write(c.wbuf); err != nil {
		return nil, err
	}
	payload, err := readFrame(c.r, &c.rbuf)
	if err != nil {
		return nil, err
	}
	resp := &pluginv1.CallToolResponse{}
	if err := proto.Unmarshal(payload, resp); err != nil {
		return nil, err
	}
	c.trim()
	return resp, nil
}

// keptBuffer bounds the buffers a socket keeps between calls.
const keptBuffer = 64 << 10

// trim drops buffers a large message grew.
func (c *laneConn) trim() {
	if cap(c.rbuf) > keptBuffer {
		c.rbuf = nil
	}
	if cap(c.wbuf) > keptBuffer {
		c.wbuf = nil
	}
}

// appendFrame appends m to b as a frame.
func appendFrame(b []byte, m proto.Message) ([]byte, error) {
	b = append(b, 0, 0, 0, 0)
	b, err := proto.MarshalOptions{}.MarshalAppend(b, m)
	if err != nil {
		return nil, err
	}
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b, nil
}

// errFrameTooLarge is a frame longer than MaxMessageSize.
var errFrameTooLarge = errors.New("lane: a frame is larger than the protocol allows")

// readFrame reads one frame's payload into *buf.
func readFrame(r *bufio.Reader, buf *[]byte) ([]byte, error) {
	var head [4]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(head[:])
	if n > MaxMessageSize {
		return nil, errFrameTooLarge
	}
	if cap(*buf) < int(n) {
		*buf = make([]byte, n)
	}
	b := (*buf)[:n]
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, err
	}
	return b, nil
}
