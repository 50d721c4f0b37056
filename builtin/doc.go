// Package builtin provides troupe's builtin agent types (explore, plan,
// review, general) and the tools they use.
//
// Nothing registers itself: call Register with the registry a manager
// will use. It registers the tools the types use, the note tool, and the
// tools that act on the agent tree: delegate and collect, which explore
// and general list (a manager offers them only to an agent below its depth
// limit, so children at the limit never see them), and ask_parent, which no
// type lists because the manager grants it to every child.
//
// Sub-packages hold the pieces: tools (read, grep, glob, ls, git,
// delegate, collect, ask_parent) and fsroot (the one path resolver every file tool goes through), offline
// (the retrieval model that lets explore run with no key and no network),
// and models (resolving "provider:model" names).
package builtin
