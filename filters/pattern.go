package filters

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// ErrPattern marks a pattern ftctl refuses before anything reaches the kernel.
var ErrPattern = errors.New("invalid pattern")

// matchType mirrors the kernel's enum regex_type (kernel/trace/trace.h) as chosen by
// filter_parse_regex (kernel/trace/trace_events_filter.c).
type matchType int

const (
	matchFull   matchType = iota // "name": strcmp
	matchFront                   // "name*": strncmp on the prefix
	matchMiddle                  // "*name*": strstr
	matchEnd                     // "*name": memcmp on the suffix
	matchGlob                    // anything else with * ? [ or \: lib/glob.c glob_match
	matchIndex                   // a leading digit: an index into available_filter_functions
)

// parseRegex is a port of filter_parse_regex without the '!' prefix (callers strip it). It
// returns the match type and the search string the kernel compares with.
//
//	"*"   -> END_ONLY ""      (matches everything)   "**"  -> MIDDLE_ONLY ""
//	"ab*" -> FRONT_ONLY "ab"  "*ab" -> END_ONLY "ab"  "*ab*" -> MIDDLE_ONLY "ab"
//	"a*b" / "a?" / "[ab]" / `a\b` / "*a?"  -> GLOB, with the whole pattern
func parseRegex(s string) (matchType, string) {
	if s != "" && s[0] >= '0' && s[0] <= '9' {
		return matchIndex, s
	}
	typ := matchFull
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '*':
			switch {
			case i == 0:
				typ = matchEnd
			case i == len(s)-1:
				if typ == matchEnd {
					typ = matchMiddle
				} else {
					typ = matchFront
				}
				s = s[:i]
				i = len(s) // the kernel NUL-terminates here and stops scanning
			default:
				return matchGlob, s
			}
		case '[', '?', '\\':
			return matchGlob, s
		}
	}
	if typ == matchEnd || typ == matchMiddle {
		s = s[1:]
	}
	return typ, s
}

// matcher is a compiled kernel pattern for one name (a function or a module).
type matcher struct {
	typ    matchType
	search string
	k      kglob // matchGlob
	never  bool  // matchGlob with an empty character class, matchIndex
}

// compileMatcher compiles s with the kernel's semantics. The fast forms are the kernel's own
// string comparisons; full globs are compiled into kglob, lib/glob.c's algorithm over tokens.
func compileMatcher(s string) (matcher, error) {
	typ, search := parseRegex(s)
	m := matcher{typ: typ, search: search}
	switch typ {
	case matchIndex:
		m.never = true // the kernel reads the name as a number, and no record has that name
	case matchGlob:
		m.k = compileKglob(search)
		m.never = m.k.never
	}
	return m, nil
}

// blank is the kernel's "g->len == 0" (a blank search matches everything in :mod: context).
func (m matcher) blank() bool { return m.typ != matchGlob && m.typ != matchIndex && m.search == "" }

func (m matcher) match(s string) bool {
	switch {
	case m.never:
		return false
	case m.typ == matchFull:
		return s == m.search
	case m.typ == matchFront:
		return strings.HasPrefix(s, m.search)
	case m.typ == matchMiddle:
		return strings.Contains(s, m.search)
	case m.typ == matchEnd:
		return strings.HasSuffix(s, m.search)
	default:
		return m.k.match(s)
	}
}

// kernelClass parses a lib/glob.c character class starting right after '['. It returns the
// set of bytes the class admits, the index just past its ']', and ok=false if it is malformed
// (unterminated), in which case the kernel treats the '[' as a literal.
func kernelClass(p string, j int) (set [256]bool, next int, ok bool) {
	at := func(k int) byte { // the kernel reads a NUL past the end
		if k < len(p) {
			return p[k]
		}
		return 0
	}
	inverted := at(j) == '!'
	if inverted {
		j++
	}
	a := at(j)
	j++
	var in [256]bool
	for {
		bb := a
		if a == 0 {
			return set, 0, false
		}
		if at(j) == '-' && at(j+1) != ']' {
			bb = at(j + 1)
			if bb == 0 {
				return set, 0, false
			}
			j += 2
		}
		for c := int(a); c <= int(bb); c++ {
			in[c] = true
		}
		a = at(j)
		j++
		if a == ']' {
			break
		}
	}
	for c := 1; c < 256; c++ { // the kernel never lets a class match the terminating NUL
		set[c] = in[c] != inverted
	}
	return set, j, true
}

// Pattern is one user pattern, compiled: a kernel glob on the function name, optionally
// qualified by a module ("PATTERN:mod:MODULE"), or a client-side regular expression.
type Pattern struct {
	Text string // as the user wrote it

	fn         matcher
	hasMod     bool
	modExclude bool // ":mod:!MODULE": every function NOT in MODULE (core included)
	mod        matcher
	re         *regexp.Regexp
}

// Compile parses a pattern with the kernel's semantics (see parseRegex, kglob and
// the :mod: rules of ftrace_match_record). It refuses, with ErrPattern, what ftctl does not
// pass through: a leading '!' (use remove), a leading digit (the kernel reads an index), function
// commands (func:traceoff...), whitespace, control or non-ASCII characters.
func Compile(text string) (*Pattern, error) {
	bad := func(why string) error { return fmt.Errorf("%w %q: %s", ErrPattern, text, why) }
	if text == "" {
		return nil, bad("empty")
	}
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch {
		case c <= ' ' || c == 0x7f:
			return nil, bad(fmt.Sprintf("contains %q: patterns are single words of printable ASCII", c))
		case c >= 0x80:
			return nil, bad("contains a non-ASCII character: kernel function names are ASCII")
		}
	}
	if text[0] == '!' {
		return nil, bad("a leading '!' is the kernel's removal syntax; use 'remove' instead")
	}
	p := &Pattern{Text: text}
	fn, rest, hasColon := strings.Cut(text, ":")
	if hasColon {
		cmd, module, ok := strings.Cut(rest, ":")
		if cmd != "mod" || !ok {
			return nil, bad("only the ':mod:MODULE' qualifier is supported; function commands " +
				"(func:traceoff, ...) are left to the kernel's own syntax")
		}
		p.hasMod = true
		if strings.HasPrefix(module, "!") {
			p.modExclude = true
			module = module[1:]
		}
		m, err := compileMatcher(module)
		if err != nil {
			return nil, err
		}
		p.mod = m
	}
	if fn != "" && fn[0] >= '0' && fn[0] <= '9' {
		return nil, bad("starts with a digit: the kernel would read it as an index into available_filter_functions")
	}
	m, err := compileMatcher(fn)
	if err != nil {
		return nil, err
	}
	if !p.hasMod && fn == "" {
		return nil, bad("empty function pattern")
	}
	p.fn = m
	return p, nil
}

// CompileRegex makes a pattern from a Go regular expression (RE2 syntax) matched, unanchored,
// against function names: a client-side convenience, resolved to explicit functions before
// anything is written.
func CompileRegex(expr string) (*Pattern, error) {
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, fmt.Errorf("%w %q: %v", ErrPattern, expr, err)
	}
	return &Pattern{Text: expr, re: re}, nil
}

// ExactName returns the name an exact (wildcard-free) pattern selects, with or without :mod:
// (false for a glob or a regular expression): a function asked for by name.
func (p *Pattern) ExactName() (string, bool) {
	if p.re != nil || p.fn.typ != matchFull || p.fn.blank() {
		return "", false
	}
	return p.fn.search, true
}

// Match says whether the kernel would select a record with this name and module ("" for the
// core kernel): a port of ftrace_match_record (kernel/trace/ftrace.c).
func (p *Pattern) Match(name, module string) bool {
	return p.moduleMatches(module) && p.nameMatches(name)
}

// moduleMatches is the module half of ftrace_match_record (always true without :mod:).
func (p *Pattern) moduleMatches(module string) bool {
	if !p.hasMod {
		return true
	}
	if p.mod.blank() {
		// blank module glob: "module xor exclude" (":mod:" = any module, ":mod:!" = core)
		return !p.modExclude != (module == "")
	}
	modMatches := module != "" && p.mod.match(module)
	return modMatches != p.modExclude
}

// nameMatches is the function half: with :mod:, a blank function pattern selects every
// function of the matching modules.
func (p *Pattern) nameMatches(name string) bool {
	switch {
	case p.re != nil:
		return p.re.MatchString(name)
	case p.hasMod && p.fn.blank():
		return true
	}
	return p.fn.match(name)
}

// Literal returns the pattern's text without wildcard syntax, for suggesting close names.
func (p *Pattern) Literal() string {
	t := p.Text
	if p.hasMod {
		t, _, _ = strings.Cut(t, ":")
	}
	return strings.Map(func(r rune) rune {
		if strings.ContainsRune("*?[]\\!", r) {
			return -1
		}
		return r
	}, t)
}

// HasModule says whether the pattern has a :mod: part (it selects by module too).
func (p *Pattern) HasModule() bool { return p.hasMod }
