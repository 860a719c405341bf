package profile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
	"weak"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/lexer"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"
)

// ErrInvalid marks a profile refused by Load or Validate: every *Error is one (errors.Is).
var ErrInvalid = errors.New("invalid profile")

// Bounds of what Load reads. goccy/go-yaml's parser is quadratic in the keys of one block
// mapping and in the depth of nesting (measured with v1.19.2: 20000 keys in one mapping,
// 260 KB of text, take 2 s and 1.6 GB; 8000 nested "[" 100 MB), so the size alone does not
// bound it: the tokens are counted first, in one linear pass of its lexer, and a file over
// these is refused before it is parsed. A real profile is far below all three.
const (
	MaxFileSize = 1 << 20 // bytes
	maxKeys     = 4096    // mapping keys in the whole file (a few per event, probe, option)
	maxDepth    = 32      // nesting of mappings and sequences (a profile needs 5)
	// maxWords bounds the lexer (about 0.8 µs and 270 bytes a token: a 1 MiB "[1,1,1...]" is
	// 1M tokens, 0.8 s and 270 MB before the parser doubles it): words (runs of non-space)
	// and flow punctuation, an upper bound of its tokens, counted first. 50000 function
	// patterns are 100000 words.
	maxWords = 100000
)

// Error is one thing wrong with a profile, where it is: FILE:LINE:COLUMN: PATH: REASON.
// Line and Column are 1-based, 0 when unknown (a profile built in Go, a file too large to
// read); Path is the field's path (spec.events[2].filter), "" for the file as a whole.
type Error struct {
	File         string
	Line, Column int
	Path         string
	Reason       string
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		if e.Line > 0 {
			fmt.Fprintf(&b, ":%d:%d", e.Line, e.Column)
		}
		b.WriteString(": ")
	}
	if e.Path != "" {
		b.WriteString(e.Path + ": ")
	}
	b.WriteString(e.Reason)
	return b.String()
}

// Is makes errors.Is(err, ErrInvalid) true for every Error.
func (e *Error) Is(target error) bool { return target == ErrInvalid }

// pos is where a value starts in the file. verbatim says that the value's text is written
// there as it is, on one line (a plain or quoted scalar without escapes), so that a position
// inside the value (a caret in a filter or a probe definition) is a column on that line.
type pos struct {
	line, col int
	verbatim  bool
}

// source is what Load knew of a profile's file: its name and where each field path is, for
// Validate's errors.
type source struct {
	file string
	at   map[string]pos
}

// sources maps each profile Load returned to its source. Profile has no field for it (its
// fields are the file's), so the table is on the side, keyed by a weak pointer and emptied
// by a cleanup when the profile is collected. A copy of a profile has no source: its errors
// name paths, not lines.
var sources struct {
	sync.Mutex
	m map[weak.Pointer[Profile]]*source
}

func remember(p *Profile, s *source) {
	wp := weak.Make(p)
	sources.Lock()
	if sources.m == nil {
		sources.m = make(map[weak.Pointer[Profile]]*source)
	}
	sources.m[wp] = s
	sources.Unlock()
	runtime.AddCleanup(p, func(wp weak.Pointer[Profile]) {
		sources.Lock()
		delete(sources.m, wp)
		sources.Unlock()
	}, wp)
}

func sourceOf(p *Profile) *source {
	sources.Lock()
	defer sources.Unlock()
	if s, ok := sources.m[weak.Make(p)]; ok {
		return s
	}
	return &source{}
}

// LoadFile reads and decodes the profile in the file at path (see Load). A file over
// MaxFileSize is refused without reading the rest of it.
func LoadFile(path string) (*Profile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := ReadBounded(f, path)
	if err != nil {
		return nil, err
	}
	return Load(path, data)
}

// ReadBounded reads a profile from r (a file, stdin), refusing more than MaxFileSize bytes;
// name is the file's name in the error.
func ReadBounded(r io.Reader, name string) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", name, err)
	}
	if len(data) > MaxFileSize {
		return nil, &Error{File: name, Reason: fmt.Sprintf("larger than %d bytes (1 MiB): not a profile", MaxFileSize)}
	}
	return data, nil
}

// Load decodes one profile from data, YAML or JSON (JSON is YAML), strictly: an unknown
// field, a value of the wrong type, a key given twice, a missing required field, several
// documents or none are refused, each error an *Error naming the file (name), line, column
// and field. It does not Validate the values; it remembers where each one is, so that
// Validate's errors can say.
//
// Anchors, aliases, merge keys and tags are refused outright rather than expanded with a
// limit: a profile has no use for them, and an alias is how a small file grows into a huge
// document (the "billion laughs"); goccy/go-yaml offers no limit on alias expansion.
func Load(name string, data []byte) (*Profile, error) {
	errAt := func(tk *token.Token, path, reason string) error {
		e := &Error{File: name, Path: path, Reason: reason}
		if tk != nil && tk.Position != nil {
			e.Line, e.Column = tk.Position.Line, tk.Position.Column
		}
		return e
	}
	if len(data) > MaxFileSize {
		return nil, &Error{File: name, Reason: fmt.Sprintf("larger than %d bytes (1 MiB): not a profile", MaxFileSize)}
	}
	if !utf8.Valid(data) {
		return nil, &Error{File: name, Reason: "not UTF-8 text"}
	}
	if line, col, ok := tooManyWords(data); !ok {
		return nil, &Error{File: name, Line: line, Column: col, Reason: fmt.Sprintf("more than %d words: not a profile", maxWords)}
	}
	tokens := lexer.Tokenize(string(data))
	if err := screen(tokens, errAt); err != nil {
		return nil, err
	}
	file, err := parser.Parse(tokens, 0)
	if err != nil {
		var ye yaml.Error
		if errors.As(err, &ye) {
			return nil, errAt(ye.GetToken(), "", syntaxReason(ye.GetMessage()))
		}
		return nil, &Error{File: name, Reason: err.Error()}
	}
	var docs []*ast.DocumentNode
	for _, d := range file.Docs {
		if d.Body != nil {
			docs = append(docs, d)
		}
	}
	switch {
	case len(docs) == 0:
		return nil, &Error{File: name, Reason: "empty: a profile is one YAML or JSON document (apiVersion, kind, metadata, spec)"}
	case len(docs) > 1:
		return nil, errAt(startToken(docs[1].Body), "", "a second document: a file holds one profile")
	}
	d := &decoder{src: &source{file: name, at: map[string]pos{}}, data: data, errAt: errAt}
	p := new(Profile)
	if err := d.decode(docs[0].Body, reflect.ValueOf(p).Elem(), ""); err != nil {
		return nil, err
	}
	remember(p, d.src)
	return p, nil
}

// screen refuses, from the tokens alone, what the parser should never see: anchors, aliases,
// merge keys and tags, and more keys or deeper nesting than a profile can have (see maxKeys).
// Block nesting is followed by the columns of the keys and "-" entries, as YAML's indentation
// rules nest them; flow nesting by its brackets.
func screen(tokens token.Tokens, errAt func(*token.Token, string, string) error) error {
	keys, flow := 0, 0
	var cols []int // columns of the open block collections
	for i, tk := range tokens {
		block := -1 // the column of a block key or entry starting here
		switch tk.Type {
		case token.AnchorType, token.AliasType:
			return errAt(tk, "", "anchors and aliases (&NAME, *NAME) are not taken in a profile: write the value out")
		case token.MergeKeyType:
			return errAt(tk, "", "merge keys (<<) are not taken in a profile: write the keys out")
		case token.TagType:
			return errAt(tk, "", fmt.Sprintf("tags (%s) are not taken in a profile: quote a value to make it a string", tk.Value))
		case token.SequenceStartType, token.MappingStartType:
			flow++
		case token.SequenceEndType, token.MappingEndType:
			flow--
		case token.MappingValueType:
			keys++
			if keys > maxKeys {
				return errAt(tk, "", fmt.Sprintf("more than %d keys: not a profile", maxKeys))
			}
			if flow == 0 && i > 0 {
				block = tokens[i-1].Position.Column
			}
		case token.SequenceEntryType, token.MappingKeyType:
			if flow == 0 {
				block = tk.Position.Column
			}
		}
		if block >= 0 {
			for len(cols) > 0 && cols[len(cols)-1] > block {
				cols = cols[:len(cols)-1]
			}
			if len(cols) == 0 || cols[len(cols)-1] < block {
				cols = append(cols, block)
			}
		}
		if len(cols)+max(flow, 0) > maxDepth {
			return errAt(tk, "", fmt.Sprintf("nested more than %d deep: not a profile", maxDepth))
		}
	}
	return nil
}

// tooManyWords counts the words of data (runs of non-space) and its flow punctuation, each of
// which may start a token, and says where the count passes maxWords (ok false).
func tooManyWords(data []byte) (line, col int, ok bool) {
	n, line, start, in := 0, 1, 0, false
	for i, c := range data {
		space := c == ' ' || c == '\t' || c == '\n' || c == '\r'
		switch {
		case space:
			in = false
		case strings.IndexByte(",[]{}", c) >= 0: // a token, and the next byte starts one
			in = false
			n++
		case !in:
			in = true
			n++
		}
		if n > maxWords {
			return line, utf8.RuneCount(data[start:i]) + 1, false
		}
		if c == '\n' {
			line, start = line+1, i+1
		}
	}
	return 0, 0, true
}

// syntaxReason words the parser's messages for people who have not read its source.
func syntaxReason(msg string) string {
	if strings.HasPrefix(msg, "mapping key ") && strings.Contains(msg, " already defined at ") {
		// mapping key "a" already defined at [1:1]
		k, at, _ := strings.Cut(strings.TrimPrefix(msg, "mapping key "), " already defined at ")
		at = strings.Trim(at, "[]")
		return fmt.Sprintf("key %s given twice (first at line %s)", k, strings.Replace(at, ":", ", column ", 1))
	}
	if strings.Contains(msg, "'\t' that cannot start any token") || strings.Contains(msg, "tab character") {
		return "a tab in indentation: YAML indents with spaces"
	}
	return "YAML syntax: " + msg
}

// decoder decodes the AST into Profile's types by their json tags, and notes each value's
// position by its path.
type decoder struct {
	src   *source
	data  []byte
	lines []string // data's lines, split when first needed
	errAt func(tk *token.Token, path, reason string) error
}

// startToken is the token a node starts with: a block mapping's first key, not its ':'.
func startToken(n ast.Node) *token.Token {
	switch n := n.(type) {
	case *ast.MappingNode:
		if !n.IsFlowStyle && len(n.Values) > 0 {
			return startToken(n.Values[0])
		}
		return n.Start
	case *ast.MappingValueNode:
		return startToken(n.Key)
	case *ast.SequenceNode:
		return n.Start
	case *ast.LiteralNode:
		return n.Start
	}
	return n.GetToken()
}

// line is the text of line n (1-based) of the file, "" past its end.
func (d *decoder) line(n int) string {
	if d.lines == nil {
		d.lines = strings.Split(string(d.data), "\n")
	}
	if n < 1 || n > len(d.lines) {
		return ""
	}
	return d.lines[n-1]
}

// note remembers where the value at path is.
func (d *decoder) note(path string, n ast.Node) {
	tk := startToken(n)
	if tk == nil || tk.Position == nil {
		return
	}
	p := pos{line: tk.Position.Line, col: tk.Position.Column}
	if s, ok := n.(*ast.StringNode); ok && !strings.Contains(s.Value, "\n") {
		// The value is verbatim when its line holds it as it is from the token's column
		// (plain) or one character after it (quoted, no escapes).
		if tk.Type == token.SingleQuoteType || tk.Type == token.DoubleQuoteType {
			p.col++
		}
		if line := d.line(p.line); line != "" {
			rest, i := line, 1
			for ; i < p.col && rest != ""; i++ {
				_, size := utf8.DecodeRuneInString(rest)
				rest = rest[size:]
			}
			p.verbatim = i == p.col && strings.HasPrefix(rest, s.Value)
		}
	}
	d.src.at[path] = p
}

func (d *decoder) decode(n ast.Node, v reflect.Value, path string) error {
	if path != "" {
		d.note(path, n)
	}
	if v.Kind() == reflect.Pointer {
		if isNull(n) {
			return d.want(n, path, v.Type().Elem())
		}
		v.Set(reflect.New(v.Type().Elem()))
		v = v.Elem()
	}
	switch v.Kind() {
	case reflect.Struct:
		return d.decodeStruct(n, v, path)
	case reflect.Map:
		return d.decodeMap(n, v, path)
	case reflect.Slice:
		seq, ok := n.(*ast.SequenceNode)
		if !ok {
			return d.want(n, path, v.Type())
		}
		v.Set(reflect.MakeSlice(v.Type(), len(seq.Values), len(seq.Values)))
		for i, item := range seq.Values {
			if err := d.decode(item, v.Index(i), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
		return nil
	case reflect.String:
		switch n := n.(type) {
		case *ast.StringNode:
			v.SetString(n.Value)
			return nil
		case *ast.LiteralNode:
			// A block scalar (| or >) ends with the newline YAML keeps unless written |- or
			// >-: no field of a profile is text with a final newline, and a long trigger
			// folded with > is one line.
			v.SetString(strings.TrimSuffix(n.Value.Value, "\n"))
			return nil
		}
		return d.want(n, path, v.Type())
	case reflect.Int:
		in, ok := n.(*ast.IntegerNode)
		if !ok {
			return d.want(n, path, v.Type())
		}
		switch x := in.Value.(type) {
		case int64:
			v.SetInt(x)
		case uint64:
			if x > 1<<62 {
				return d.errAt(in.Token, path, fmt.Sprintf("%s is too large", in.Token.Value))
			}
			v.SetInt(int64(x))
		default:
			return d.want(n, path, v.Type())
		}
		return nil
	case reflect.Bool:
		b, ok := n.(*ast.BoolNode)
		if !ok {
			return d.want(n, path, v.Type())
		}
		v.SetBool(b.Value)
		return nil
	}
	return d.errAt(startToken(n), path, fmt.Sprintf("cannot decode into %s", v.Type())) // a new field's type: extend decode
}

// pairs are the key-value pairs of a mapping node, which goccy/go-yaml gives as a
// MappingValueNode alone when there is one.
func pairs(n ast.Node) ([]*ast.MappingValueNode, bool) {
	switch n := n.(type) {
	case *ast.MappingNode:
		return n.Values, true
	case *ast.MappingValueNode:
		return []*ast.MappingValueNode{n}, true
	}
	return nil, false
}

// keyName is a key's text; ok is false for a key that is not a scalar (? [a, b]: ...).
func keyName(k ast.MapKeyNode) (string, bool) {
	switch k := k.(type) {
	case *ast.StringNode:
		return k.Value, true
	case *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode, *ast.NullNode:
		return k.GetToken().Value, true
	}
	return "", false
}

// field is one struct field as the file names it.
type field struct {
	name     string
	index    int
	required bool
}

func fieldsOf(t reflect.Type) []field {
	var fs []field
	for i := range t.NumField() {
		tag := t.Field(i).Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" || !t.Field(i).IsExported() {
			continue
		}
		if name == "" {
			name = t.Field(i).Name
		}
		fs = append(fs, field{name: name, index: i, required: !strings.Contains(","+opts+",", ",omitempty,")})
	}
	return fs
}

func (d *decoder) decodeStruct(n ast.Node, v reflect.Value, path string) error {
	kvs, ok := pairs(n)
	if !ok {
		return d.want(n, path, v.Type())
	}
	fs := fieldsOf(v.Type())
	seen := map[string]bool{}
	for _, kv := range kvs {
		name, ok := keyName(kv.Key)
		if !ok {
			return d.errAt(startToken(kv.Key), path, "a key is a plain name")
		}
		i := -1
		for j, f := range fs {
			if f.name == name {
				i = j
			}
		}
		if i < 0 {
			return d.errAt(startToken(kv.Key), path, unknownField(name, fs))
		}
		seen[name] = true
		if err := d.decode(kv.Value, v.Field(fs[i].index), join(path, name)); err != nil {
			return err
		}
	}
	for _, f := range fs {
		if f.required && !seen[f.name] {
			where := path
			if where == "" {
				where = "the profile"
			}
			return d.errAt(startToken(n), "", fmt.Sprintf("%s has no %q: it is required", where, f.name))
		}
	}
	return nil
}

// unknownField says a key is not one of fs, with the close name when there is one.
func unknownField(name string, fs []field) string {
	var names []string
	for _, f := range fs {
		names = append(names, f.name)
	}
	msg := fmt.Sprintf("unknown field %q", name)
	if c := closest(name, names); c != "" {
		return msg + fmt.Sprintf(" (did you mean %q?)", c)
	}
	return msg + "; known here: " + strings.Join(names, ", ")
}

func (d *decoder) decodeMap(n ast.Node, v reflect.Value, path string) error {
	kvs, ok := pairs(n)
	if !ok {
		return d.want(n, path, v.Type())
	}
	v.Set(reflect.MakeMapWithSize(v.Type(), len(kvs)))
	for _, kv := range kvs {
		name, ok := keyName(kv.Key)
		if !ok {
			return d.errAt(startToken(kv.Key), path, "a key is a plain name")
		}
		p := mapPath(path, name)
		ev := reflect.New(v.Type().Elem()).Elem()
		if err := d.decode(kv.Value, ev, p); err != nil {
			return err
		}
		d.note(p, kv.Key) // a map entry's place is its key, the name Validate checks
		v.SetMapIndex(reflect.ValueOf(name), ev)
	}
	return nil
}

// want refuses a value of the wrong type, saying what was expected and what was found.
func (d *decoder) want(n ast.Node, path string, t reflect.Type) error {
	var w string
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		w = "a mapping (KEY: VALUE lines)"
	case reflect.Slice:
		w = "a list (- ITEM lines, or [A, B])"
	case reflect.String:
		w = "a string"
	case reflect.Int:
		w = "a whole number"
	case reflect.Bool:
		w = "true or false"
	default:
		w = t.String()
	}
	msg := fmt.Sprintf("want %s, not %s", w, describe(n))
	switch n.(type) {
	case *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode, *ast.InfinityNode, *ast.NanNode:
		if t.Kind() == reflect.String {
			msg += fmt.Sprintf(" (quote it for a string: %q)", n.GetToken().Value)
		}
	}
	return d.errAt(startToken(n), path, msg)
}

// describe names what a node is, for "want X, not Y".
func describe(n ast.Node) string {
	switch n := n.(type) {
	case *ast.MappingNode, *ast.MappingValueNode:
		return "a mapping"
	case *ast.SequenceNode:
		return "a list"
	case *ast.NullNode:
		return "nothing (null)"
	case *ast.StringNode:
		return strconv.Quote(n.Value)
	case *ast.LiteralNode:
		return "a block of text"
	case *ast.IntegerNode, *ast.FloatNode, *ast.InfinityNode, *ast.NanNode:
		return "the number " + n.GetToken().Value
	case *ast.BoolNode:
		return n.GetToken().Value
	}
	return n.Type().String()
}

func isNull(n ast.Node) bool { _, ok := n.(*ast.NullNode); return ok }

// join is a struct field's path.
func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// mapPath is a map entry's path: .NAME for a plain word, ["NAME"] otherwise.
func mapPath(path, name string) string {
	if name != "" && strings.Trim(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") == "" {
		return join(path, name)
	}
	return path + "[" + strconv.Quote(name) + "]"
}
