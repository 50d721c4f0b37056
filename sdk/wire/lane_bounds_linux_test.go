package wire

import (
	"bufio"
	"context"
	"encoding/binary"
	"io"
	"net"
	"os"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pluginv1 "github.com/troupe-dev/troupe/sdk/wire/proto/troupe/plugin/v1"
)

// hostServedLane is a lane whose host end serves the Host service, and
// the plugin's end, not serving, for the test to send on as a plugin
// that misbehaves would. Both are closed, and their goroutines gone,
// when the test ends.
func hostServedLane(t *testing.T) *peer {
	t.Helper()
	lane, end, err := NewLane()
	require.NoError(t, err)
	plugin, err := peerOf(end)
	require.NoError(t, err)
	lane.ServeHost(fakeHost{})
	t.Cleanup(func() {
		_ = plugin.close()
		_ = lane.Close()
		goleak.VerifyNone(t)
	})
	return plugin
}

// openSocket sends the other side a new socket, as number id, and
// returns this end of it.
func openSocket(t *testing.T, p *peer, id uint32) *net.UnixConn {
	t.Helper()
	mine, theirs, err := socketPair()
	require.NoError(t, err)
	defer theirs.Close()
	_, _, err = p.ctl.WriteMsgUnix(laneMsg(laneNew, id), syscall.UnixRights(int(theirs.Fd())), nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = mine.Close() })
	return mine
}

// openFDs is how many descriptors this process has open.
func openFDs(t *testing.T) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	return len(fds)
}

// unread is how many bytes written to c the other end has not read.
func unread(t *testing.T, c *net.UnixConn) int {
	t.Helper()
	raw, err := c.SyscallConn()
	require.NoError(t, err)
	var n int
	var ioErr error
	require.NoError(t, raw.Control(func(fd uintptr) {
		n, ioErr = unix.IoctlGetInt(int(fd), unix.SIOCOUTQ)
	}))
	require.NoError(t, ioErr)
	return n
}

// readersWaiting is how many of the sockets a lane serves wait for the
// other side's bytes.
func readersWaiting() int {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	for g := range strings.SplitSeq(string(buf), "\n\n") {
		if strings.Contains(g, "[IO wait") && strings.Contains(g, "serveLaneConn") {
			n++
		}
	}
	return n
}

// A frame's length is the sender's word: a plugin that opens many
// sockets and sends each the length of the largest frame and nothing
// more gets a few kilobytes of the host's memory for each, not the
// frame's size.
func TestFrameHeadersAloneDoNotGrowTheHeap(t *testing.T) {
	plugin := hostServedLane(t)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	var head [4]byte
	binary.BigEndian.PutUint32(head[:], MaxMessageSize+1)
	conns := make([]*net.UnixConn, 64)
	for i := range conns {
		conns[i] = openSocket(t, plugin, uint32(i+1))
		_, err := conns[i].Write(head[:])
		require.NoError(t, err)
	}
	// Every header is read, and every socket's reader waits for the rest.
	require.Eventually(t, func() bool {
		for _, c := range conns {
			if unread(t, c) > 0 {
				return false
			}
		}
		return readersWaiting() >= len(conns)
	}, 10*time.Second, time.Millisecond)
	runtime.GC()
	runtime.ReadMemStats(&after)
	grown := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	assert.Less(t, grown, int64(16<<20), "64 frame headers grew the heap by %d MiB", grown>>20)
}

// Descriptors a plugin sends with messages that do not claim them are
// closed as they come, not kept until the lane closes.
func TestDescriptorsSentWithoutASocketToClaimThemAreClosedAtOnce(t *testing.T) {
	plugin := hostServedLane(t)
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer w.Close()
	before := openFDs(t)
	rights := syscall.UnixRights(int(r.Fd()))
	for i := range 500 {
		kind := []byte{'x', laneCancel}[i%2]
		_, _, err := plugin.ctl.WriteMsgUnix(laneMsg(kind, uint32(i)), rights, nil)
		require.NoError(t, err)
	}
	require.NoError(t, r.Close())
	// A call made after them is answered once all of them were read.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := laneHost{plugin}.Generate(ctx, &pluginv1.GenerateRequest{RunId: "r", Messages: []*pluginv1.Message{{Text: "hi"}}})
	require.NoError(t, err)
	assert.Equal(t, "r:hi", resp.GetText())
	// The call's socket, open on both sides, less the pipe's end closed.
	assert.LessOrEqual(t, openFDs(t)-before, 2, "descriptors the host kept")
}

// A control message that carries more descriptors than a lane takes is
// truncated, and which message the rest belong to can no longer be told:
// the host closes what came and the lane, and keeps none of them.
func TestATruncatedControlMessageEndsTheLaneAndLeavesNoDescriptorOpen(t *testing.T) {
	plugin := hostServedLane(t)
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer w.Close()
	before := openFDs(t)
	fds := make([]int, maxControlFDs+1)
	for i := range fds {
		fds[i] = int(r.Fd())
	}
	_, _, err = plugin.ctl.WriteMsgUnix(laneMsg(laneNew, 1), syscall.UnixRights(fds...), nil)
	require.NoError(t, err)
	require.NoError(t, r.Close())
	require.NoError(t, plugin.ctl.SetReadDeadline(time.Now().Add(10*time.Second)))
	_, err = plugin.ctl.Read(make([]byte, 1))
	require.ErrorIs(t, err, io.EOF, "the host closed the lane")
	assert.LessOrEqual(t, openFDs(t)-before, -1, "descriptors the host kept")
	_, err = laneHost{plugin}.Note(context.Background(), &pluginv1.NoteRequest{})
	assert.Equal(t, codes.Unavailable, status.Code(err))
}

// A host serves at most maxServedLaneConns of a plugin's sockets at
// once: one more is closed as it comes, and those served serve on.
func TestALaneServesABoundedNumberOfSocketsAtOnce(t *testing.T) {
	plugin := hostServedLane(t)
	conns := make([]*net.UnixConn, maxServedLaneConns+1)
	for i := range conns {
		conns[i] = openSocket(t, plugin, uint32(i+1))
	}
	last := conns[maxServedLaneConns]
	require.NoError(t, last.SetReadDeadline(time.Now().Add(10*time.Second)))
	_, err := last.Read(make([]byte, 1))
	require.ErrorIs(t, err, io.EOF, "the socket past the bound is closed")

	c := &laneConn{c: conns[0], r: bufio.NewReader(conns[0])}
	resp := &pluginv1.GenerateResponse{}
	require.NoError(t, c.roundtrip(laneGenerate, nil, &pluginv1.GenerateRequest{RunId: "r", Messages: []*pluginv1.Message{{Text: "on"}}}, resp))
	assert.Equal(t, "r:on", resp.GetText())
}
