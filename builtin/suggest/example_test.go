package suggest_test

import (
	"fmt"

	"github.com/troupe-dev/troupe/builtin/suggest"
)

func ExampleNearest() {
	tools := []string{"read", "grep", "glob", "ls", "git", "note"}
	fmt.Printf("%q\n", suggest.Nearest("grpe", tools))
	fmt.Printf("%q\n", suggest.Nearest("rm", tools))
	// Output:
	// "grep"
	// ""
}

func ExampleHint() {
	types := []string{"explore", "plan", "review", "general"}
	fmt.Println("unknown agent type \"explroe\"" + suggest.Hint("explroe", types, "types"))
	fmt.Println("unknown agent type \"deploy\"" + suggest.Hint("deploy", types, "types"))
	// Output:
	// unknown agent type "explroe"; did you mean "explore"?
	// unknown agent type "deploy"; the types are explore, general, plan, review
}
