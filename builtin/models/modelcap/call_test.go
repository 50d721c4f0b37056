package modelcap_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/troupe-dev/troupe/builtin/models/modelcap"
)

type parentKey struct{}

// A call's context is its parent's in all else: its values, its end and
// the cause of its end pass through.
func TestACallsContextIsItsParentsInAllElse(t *testing.T) {
	parent, cancel := context.WithCancelCause(context.WithValue(context.Background(), parentKey{}, "kept"))
	info := modelcap.CallInfo{Task: "t", Turns: 3, ToolCalls: 2}
	ctx := modelcap.WithCall(parent, info)
	if got, ok := modelcap.CallFrom(ctx); !ok || got != info {
		t.Fatalf("CallFrom = %+v, %v; want %+v", got, ok, info)
	}
	if got := ctx.Value(parentKey{}); got != "kept" {
		t.Fatalf("the parent's value reads %v", got)
	}
	// A context made from it is cancelled with it, as from its parent.
	child, stop := context.WithCancel(ctx)
	defer stop()
	why := errors.New("ended")
	cancel(why)
	<-child.Done()
	if !errors.Is(context.Cause(child), why) || !errors.Is(context.Cause(ctx), why) {
		t.Fatalf("causes %v and %v, want %v", context.Cause(child), context.Cause(ctx), why)
	}
	if _, ok := modelcap.CallFrom(parent); ok {
		t.Fatal("the parent carries the call's info")
	}
}

// A call's context prints as its parent's with the call added, without
// the task it carries, as a context made by WithValue would.
func TestACallsContextPrintsWithoutItsTask(t *testing.T) {
	ctx := modelcap.WithCall(context.Background(), modelcap.CallInfo{Task: "a secret task"})
	got := fmt.Sprint(ctx)
	if strings.Contains(got, "secret") || !strings.HasPrefix(got, "context.Background") {
		t.Fatalf("the context prints as %q", got)
	}
}
