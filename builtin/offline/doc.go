// Package offline provides troupe's offline retrieval model: a deterministic
// llms.Model that needs no API key and no network, so that the explore agent
// works on any machine.
//
// The model is not a language model. It runs a fixed retrieval policy
// through the same native tool calling a real model uses:
//
//  1. From the task (the last human message) it extracts search terms —
//     identifiers, their camelCase and snake_case parts, quoted strings and
//     the remaining words minus stop words — and calls glob on file names
//     containing the top terms and grep once for each of them.
//  2. It scores every matching line (distinct terms, definitions such as
//     "func X" or "type X", file names, a small penalty for tests, vendored
//     code and docs) and calls read around the best line of the top files.
//  3. It answers with ranked findings as Markdown: a first line saying that
//     this is the offline retrieval model and how to configure a real one,
//     then "## Findings" with one numbered item per `path:line`. A path
//     that would not read back as itself (it holds ':', a newline, a
//     space, bytes that are not UTF-8, ...) is Go-quoted: `"a:b.go":3`.
//
// When the tools offered include delegate and the task explicitly asks
// several things — the items of a bulleted or numbered list, or several
// sentences ending with '?' — the model delegates instead of searching:
//
//  1. Its first turn is one delegate call with an explore task per
//     question (at most 8; the label is made of the question's words, the
//     prompt is the question), concurrency 2, mode parallel, return json.
//  2. Given the delegate tool's result, it answers with a first line
//     saying that the split into subtasks was mechanical, one per listed
//     question, and that it is not a language model, then one section per
//     question with the findings of that question's child, read from the
//     child's report with ParseFindings and written again as `path:line`
//     items, so that ParseFindings of the merged answer gives every
//     child's findings. A result that is not JSON is quoted as it came.
//
// A task that asks one thing is searched as above; so is every task of a
// child, which is not offered delegate.
//
// Everything is derived from the messages, so one Model is safe for
// concurrent use and the same conversation always gets the same answer.
// Token usage is estimated (four bytes a token) and reported in the
// choice's GenerationInfo like a provider would; WithMaxTokens is honoured
// by dropping findings from the end.
//
// Tool output is read with the tools package's own decoders (tools.ParseGrep
// and tools.ParseGlob), which give back exact paths, so that every finding
// names a file that exists.
//
// ParseFindings turns an answer — the offline model's or a real model's —
// into a list of Finding values for structured output. A Finding's JSON
// carries a path that is not UTF-8 exactly in "path_bytes" (see Finding).
package offline
