//go:build unix

package wire

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	pluginv1 "github.com/troupe-dev/troupe/sdk/wire/proto/troupe/plugin/v1"
)

// hostHandler answers the Host service's calls that come over a lane
// with srv.
func hostHandler(srv pluginv1.HostServer) handler {
	return func(ctx context.Context, method byte, b []byte) (proto.Message, error) {
		switch method {
		case laneGenerate:
			return hostCall(ctx, b, &pluginv1.GenerateRequest{}, srv.Generate)
		case laneHostCallTool:
			return hostCall(ctx, b, &pluginv1.HostCallToolRequest{}, srv.CallTool)
		case laneTools:
			return hostCall(ctx, b, &pluginv1.ToolsRequest{}, srv.Tools)
		case laneNote:
			return hostCall(ctx, b, &pluginv1.NoteRequest{}, srv.Note)
		case laneAskParent:
			return hostCall(ctx, b, &pluginv1.AskParentRequest{}, srv.AskParent)
		case laneEvent:
			return hostCall(ctx, b, &pluginv1.EventRequest{}, srv.Event)
		}
		return nil, status.Errorf(codes.Unimplemented, "the host's lane has no method %d", method)
	}
}

// hostCall decodes b into req and calls fn with it.
func hostCall[Req proto.Message, Resp proto.Message](ctx context.Context, b []byte, req Req, fn func(context.Context, Req) (Resp, error)) (proto.Message, error) {
	if err := proto.Unmarshal(b, req); err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	return fn(ctx, req)
}

// laneHost is a client of the Host service on a lane. Call options have
// no meaning there and are ignored.
type laneHost struct{ p *peer }

var _ pluginv1.HostClient = laneHost{}

func (h laneHost) Generate(ctx context.Context, in *pluginv1.GenerateRequest, _ ...grpc.CallOption) (*pluginv1.GenerateResponse, error) {
	return callOn(ctx, h.p, laneGenerate, in, &pluginv1.GenerateResponse{})
}

func (h laneHost) CallTool(ctx context.Context, in *pluginv1.HostCallToolRequest, _ ...grpc.CallOption) (*pluginv1.CallToolResponse, error) {
	return callOn(ctx, h.p, laneHostCallTool, in, &pluginv1.CallToolResponse{})
}

func (h laneHost) Tools(ctx context.Context, in *pluginv1.ToolsRequest, _ ...grpc.CallOption) (*pluginv1.ToolsResponse, error) {
	return callOn(ctx, h.p, laneTools, in, &pluginv1.ToolsResponse{})
}

func (h laneHost) Note(ctx context.Context, in *pluginv1.NoteRequest, _ ...grpc.CallOption) (*pluginv1.Ack, error) {
	return callOn(ctx, h.p, laneNote, in, &pluginv1.Ack{})
}

func (h laneHost) AskParent(ctx context.Context, in *pluginv1.AskParentRequest, _ ...grpc.CallOption) (*pluginv1.AskParentResponse, error) {
	return callOn(ctx, h.p, laneAskParent, in, &pluginv1.AskParentResponse{})
}

func (h laneHost) Event(ctx context.Context, in *pluginv1.EventRequest, _ ...grpc.CallOption) (*pluginv1.Ack, error) {
	return callOn(ctx, h.p, laneEvent, in, &pluginv1.Ack{})
}

// callOn makes one call of method on p, answered into resp.
func callOn[Resp proto.Message](ctx context.Context, p *peer, method byte, req proto.Message, resp Resp) (Resp, error) {
	if err := p.call(ctx, method, req, resp); err != nil {
		var zero Resp
		return zero, err
	}
	return resp, nil
}
