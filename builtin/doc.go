// Package builtin provides troupe's builtin agent types (explore, plan,
// review, general) and the tools they use.
//
// Nothing registers itself: call Register with the registry a manager
// will use. Sub-packages hold the pieces: tools (read, grep, glob, ls, git)
// and fsroot (the one path resolver every file tool goes through), offline
// (the retrieval model that lets explore run with no key and no network),
// and models (resolving "provider:model" names).
package builtin
