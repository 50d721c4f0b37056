package offline

import "github.com/troupe-dev/troupe/builtin/models/modelcap"

// This file fits the search to what the agent's budgets leave, so that a
// run with a small budget answers from a smaller search rather than
// being cut short before its answer: each turn knows the tokens left
// (the call's MaxTokens, which the manager sets to what its input
// leaves) and, from the manager's modelcap.CallInfo, the turns and the
// tool calls left.

// allowance is what the agent's budgets leave one call.
type allowance struct {
	tokens    int // output tokens the call may take, all the tokens left after its input; 0: no limit
	input     int // the call's input tokens, as the manager counts them
	turns     int // model calls left, this one included; modelcap.Unlimited
	toolCalls int // tool calls left; modelcap.Unlimited
}

// Token costs, for fitting the turns to come to the tokens left.
const (
	// perMessageTokens is what the manager counts for each message's
	// framing, on top of its text.
	perMessageTokens = 4
	// grepLineTokens is a grep line as it comes back: path, number, text.
	grepLineTokens = 30
	// readLineTokens is a numbered line read.
	readLineTokens = 13
	// callTokens is one tool call asked for and its response's framing.
	callTokens = 40
	// answerTokens is an answer with its best findings; it is cut to fit.
	answerTokens = 400
	// slackTokens covers what an answer may not start with: the
	// manager's least output worth a call, and estimates that fall short.
	slackTokens = 100
	// globLines is what a glob's paths cost, in grep lines.
	globLines = 20
	// minGrepResults is the fewest lines a grep asks for when a read turn
	// follows the search; without one, fewGrepResults, or, for the one
	// grep that is left when the tokens pay for no more, a single line.
	minGrepResults = 20
	fewGrepResults = 5
	// fullSearchTokens is the tokens left under which the search is lean
	// (leanConcepts concepts, one mention grep, leanReads reads), as a
	// child's share of its parent's budget is.
	fullSearchTokens = 116_000
	leanConcepts     = 3
	leanReads        = 4
)

// lean reports whether the tokens left call for the lean search.
func (al allowance) lean() bool { return al.tokens > 0 && al.tokens < fullSearchTokens }

// limited reports whether n, a count of CallInfo, is limited to less
// than want.
func limited(n, want int) bool { return n != modelcap.Unlimited && n < want }

// readsAfterSearch is the reads the turns and tool calls leave for a
// read turn after the search: none unless a turn is left for the reads
// and one for the answer, and a third of the tool calls at most, so that
// most go to the search.
func (al allowance) readsAfterSearch() int {
	n := maxReadFiles
	if al.lean() {
		n = leanReads
	}
	if limited(al.turns, 3) {
		return 0
	}
	if al.toolCalls != modelcap.Unlimited {
		n = min(n, max(al.toolCalls-1, 0)/3)
	}
	return n
}

// searchCall is one call of the search turn, before it is fitted.
type searchCall struct {
	kind    searchKind
	pattern string // a grep's or glob's pattern, the symbols query
	results int    // a grep's or symbols' max_results in the full search
}

// searchKind is what a search call looks for, in the order the search
// turn makes its calls.
type searchKind int

const (
	globSearch    searchKind = iota // file names
	symbolsSearch                   // declarations whose names or docs hold a concept
	defSearch                       // definitions that name a concept
	pairSearch                      // lines where concepts meet
	commentSearch                   // comments that name a concept
	mentionSearch                   // a term as written, any case
)

// fitSearch keeps the search calls (best first) that the allowance
// pays for, with the lines each grep may return: as many as the tool
// calls left allow, once the read turn's share is set aside; then, under
// a token limit, as many lines as the tokens pay for, read again by the
// turns after; with too few tokens for reads, a search answered from its
// grep lines alone; with too few for a few lines a grep, fewer greps.
// text is what the turn says beside its calls.
func (al allowance) fitSearch(text string, calls []searchCall) []searchCall {
	if al.toolCalls != modelcap.Unlimited {
		calls = calls[:max(1, min(len(calls), al.toolCalls-al.readsAfterSearch()))]
	}
	if al.tokens <= 0 {
		return calls
	}
	for {
		// What the turn writes, and the framing of each response.
		out := estimateTokens(outputChars(text, searchToolCalls(calls)))
		framing := perMessageTokens * (len(calls) + 1)
		full, greps := 0, 0
		for _, c := range calls {
			if c.kind != globSearch {
				full += c.results * lineCost(c)
				greps++
			}
		}
		for reads := al.readsAfterSearch(); reads >= 0; reads-- {
			lines := al.grepLines(out, reads) - globCost(calls) - framing/grepLineTokens - 1
			least := greps * fewGrepResults
			switch {
			case reads > 0:
				least = greps * minGrepResults
			case greps == 1:
				least = 1
			}
			if lines >= least {
				return sizeGreps(calls, float64(lines)/float64(max(full, 1)), reads > 0)
			}
		}
		if len(calls) == 1 {
			return sizeGreps(calls, 0, false)
		}
		calls = calls[:len(calls)-1]
	}
}

// grepLines is how many grep lines the tokens left pay for when the
// search turn costs out and reads follow it. Every message is sent
// again on each later turn: without reads the grep lines are read once
// (by the answer's turn), with them twice, beside the reads.
func (al allowance) grepLines(out, reads int) int {
	left := al.tokens - slackTokens - answerTokens
	if reads == 0 {
		return (left - al.input - 2*out) / grepLineTokens
	}
	readTurn := reads * callTokens
	return (left - 2*al.input - 3*out - 2*readTurn - reads*candReadLimit*readLineTokens) / (2 * grepLineTokens)
}

// lineCost is what a line of a search call's output costs, in grep
// lines.
func lineCost(c searchCall) int {
	if c.kind == symbolsSearch {
		return symbolLineTokens / grepLineTokens
	}
	return 1
}

func globCost(calls []searchCall) int {
	for _, c := range calls {
		if c.kind == globSearch {
			return globLines
		}
	}
	return 0
}

// sizeGreps sets each grep's max_results to scale of its full count: at
// least minGrepResults when reads follow, else at least one.
func sizeGreps(calls []searchCall, scale float64, reads bool) []searchCall {
	least := 1
	if reads {
		least = minGrepResults
	}
	if scale <= 0 {
		least = 1
	}
	out := make([]searchCall, len(calls))
	for i, c := range calls {
		if c.kind != globSearch {
			c.results = min(c.results, max(least, int(float64(c.results)*scale)))
		}
		out[i] = c
	}
	return out
}

// reads is how many of a read turn's planned reads (best first) the
// allowance pays for, its text (the findings so far) included: the read
// turn must leave a turn to answer in, a tool call a read, and tokens
// for this turn, the reads and the answer, the whole conversation being
// sent again with them. 0 means answer now.
func (al allowance) reads(plan []readReq, text string) int {
	n := len(plan)
	if limited(al.turns, 2) {
		return 0
	}
	if al.toolCalls != modelcap.Unlimited {
		n = min(n, al.toolCalls)
	}
	if al.tokens <= 0 {
		return n
	}
	for ; n > 0; n-- {
		out := estimateTokens(len(text)) + n*callTokens
		read := 0
		for _, p := range plan[:n] {
			read += p.limit * readLineTokens
		}
		if 2*out+al.input+read+answerTokens+slackTokens <= al.tokens {
			return n
		}
	}
	return 0
}
