package offline_test

import (
	"fmt"

	"github.com/troupe-dev/troupe/builtin/offline"
)

func ExampleExtractTerms() {
	fmt.Println(offline.ExtractTerms("Where is parseConfig called when the \"config file\" is missing?"))
	// Output: [config file parseConfig miss config parse]
}

func ExampleParseFindings() {
	answer := `The budget is checked before every model call.

1. ` + "`manager/loop.go:86`" + ` — the tokens left are computed here (relevance 0.9)
2. **manager/loop.go:106**: the budget is checked again after the call
`
	for _, f := range offline.ParseFindings(answer) {
		fmt.Printf("%s:%d %.2f %s\n", f.Path, f.Line, f.Relevance, f.Snippet)
	}
	// Output:
	// manager/loop.go:86 0.90 the tokens left are computed here
	// manager/loop.go:106 0.50 the budget is checked again after the call
}
