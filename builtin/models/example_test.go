package models_test

import (
	"context"
	"fmt"

	"github.com/troupe-dev/troupe/builtin/models"
)

// With no TROUPE_MODEL set, the default is the offline retrieval model,
// which needs no key.
func ExampleResolver_Resolve() {
	r := models.Resolver{Getenv: func(string) string { return "" }}
	name := r.Default()
	_, err := r.Resolve(context.Background(), name)
	fmt.Println(name, err)
	_, err = r.Resolve(context.Background(), "anthropic:claude-sonnet-4-5")
	fmt.Println(err)
	// Output:
	// offline <nil>
	// cannot resolve model "anthropic:claude-sonnet-4-5": set ANTHROPIC_API_KEY
}
