package agenttypes_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/troupe-dev/troupe/agenttypes"
)

// A registry refuses a second type under a name it already has.
func ExampleRegistry_RegisterType() {
	reg := agenttypes.NewRegistry()
	reviewer := agenttypes.Type{Name: "reviewer", Description: "reviews diffs", Tools: []string{"git"}}
	fmt.Println(reg.RegisterType(reviewer))
	err := reg.RegisterType(reviewer)
	fmt.Println(errors.Is(err, agenttypes.ErrDuplicate))
	_, err = reg.Type("writer")
	fmt.Println(errors.Is(err, agenttypes.ErrUnknownType))
	// Output:
	// <nil>
	// true
	// true
}

// A tool reads the calling agent's environment from its context.
func ExampleEnvFrom() {
	where := &agenttypes.ToolFunc{
		ToolSpec: agenttypes.ToolSpec{Name: "where", Description: "says where the agent works"},
		Func: func(ctx context.Context, _ json.RawMessage) (string, error) {
			return agenttypes.EnvFrom(ctx).Dir, nil
		},
	}
	ctx := agenttypes.WithEnv(context.Background(), &agenttypes.Env{Dir: "/srv/repo"})
	out, _ := where.Call(ctx, nil)
	fmt.Println(out)
	// Output: /srv/repo
}
