# Run on the files yaegi extract writes (see stdsyms.go): each init fills
# the table of its package at the first Load, not at start.
/^func init() {$/,/^}$/{
s/^func init() {$/func init() {\n\tlazy = append(lazy, func() {/
s/^}$/\t})\n}/
}
s/^\(\t*\)Symbols\[/\1symbols[/
