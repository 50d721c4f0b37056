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

	"google.golang.org/protobuf/proto"

	"github.com/troupe-dev/troupe/sdk/fault"
	pluginv1 "github.com/troupe-dev/troupe/sdk/wire/proto/troupe/plugin/v1"
)

// LaneServer is a plugin's end of its lane (see NewLane).
type LaneServer struct {
	ctl *net.UnixConn

	mu    sync.Mutex
	calls map[uint32]*laneCall // by socket number
}

// laneCall is the call in flight on one socket of a lane, if any.
type laneCall struct {
	mu        sync.Mutex
	cancel    context.CancelFunc // the call in flight's
	cancelled bool               // the host cancelled a call: the socket is done
}

// begin makes cancel the call in flight's, and reports false when the
// host has cancelled already.
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
	return laneServer(os.NewFile(uintptr(fd), "lane"))
}

// laneServer serves the lane whose plugin end is f, which it closes.
func laneServer(f *os.File) (*LaneServer, error) {
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
	return &LaneServer{ctl: ctl, calls: map[uint32]*laneCall{}}, nil
}

// Serve serves the lane: each call that comes over it is given to call,
// on the goroutine that read it, with a context that the host's
// cancellation ends. It returns once the host closes the lane.
func (s *LaneServer) Serve(call func(context.Context, *pluginv1.CallToolRequest) *pluginv1.CallToolResponse) error {
	defer s.ctl.Close()
	var fds []int // received, not yet claimed by their laneNew
	defer func() {
		for _, fd := range fds {
			_ = syscall.Close(fd)
		}
	}()
	buf := make([]byte, 0, 64*laneMsgSize)
	oob := make([]byte, syscall.CmsgSpace(4*8))
	for {
		n, oobn, _, _, err := s.ctl.ReadMsgUnix(buf[len(buf):cap(buf)], oob)
		fds = append(fds, receivedFDs(oob[:oobn])...)
		buf = buf[:len(buf)+n]
		for len(buf) >= laneMsgSize {
			kind, id := buf[0], binary.BigEndian.Uint32(buf[1:laneMsgSize])
			buf = buf[:copy(buf, buf[laneMsgSize:])]
			switch {
			case kind == laneNew && len(fds) > 0:
				fd := fds[0]
				fds = fds[1:]
				s.accept(id, fd, call)
			case kind == laneCancel:
				s.cancel(id)
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

// accept serves the socket fd as socket id.
func (s *LaneServer) accept(id uint32, fd int, call func(context.Context, *pluginv1.CallToolRequest) *pluginv1.CallToolResponse) {
	f := os.NewFile(uintptr(fd), "lane")
	conn, err := net.FileConn(f)
	_ = f.Close()
	if err != nil {
		return
	}
	c := &laneCall{}
	s.mu.Lock()
	s.calls[id] = c
	s.mu.Unlock()
	go func() {
		serveLaneConn(conn, c, call)
		s.mu.Lock()
		delete(s.calls, id)
		s.mu.Unlock()
	}()
}

func (s *LaneServer) cancel(id uint32) {
	s.mu.Lock()
	c := s.calls[id]
	s.mu.Unlock()
	if c != nil {
		c.stop()
	}
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

// serveLaneConn serves the calls of one socket, one at a time, each on
// this goroutine, until the host closes it or cancels a call.
func serveLaneConn(conn net.Conn, c *laneCall, call func(context.Context, *pluginv1.CallToolRequest) *pluginv1.CallToolResponse) {
	defer conn.Close()
	r := bufio.NewReader(conn)
	var rbuf, wbuf []byte
	for {
		payload, err := readFrame(r, &rbuf)
		if err != nil {
			return
		}
		req := &pluginv1.CallToolRequest{}
		if err := proto.Unmarshal(payload, req); err != nil {
			return
		}
		ctx, cancel := context.WithCancel(context.Background())
		if !c.begin(cancel) {
			cancel()
			return
		}
		resp := call(ctx, req)
		c.end()
		cancel()
		if wbuf = answer(conn, wbuf, resp); wbuf == nil {
			return
		}
		if cap(rbuf) > keptBuffer {
			rbuf = nil
		}
	}
}

// answer writes resp as a frame to conn, or an error in its place when it
// is larger than the protocol allows, and returns the buffer it used, or
// nil when the write failed.
func answer(conn net.Conn, buf []byte, resp *pluginv1.CallToolResponse) []byte {
	if n := proto.Size(resp); n > MaxMessageSize {
		resp = &pluginv1.CallToolResponse{Error: ErrorToWire(&fault.Error{Code: fault.InvalidArgument,
			Message: fmt.Sprintf("the tool's answer is %d bytes; at most %d cross", n, MaxMessageSize)})}
	}
	buf, err := appendFrame(buf[:0], resp)
	if err != nil {
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
