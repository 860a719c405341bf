package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
)

// modulePath is the import path of the repository's root package.
const modulePath = "github.com/ftctl/ftctl"

// fieldComments are the comments of the struct fields in the repository's Go source (tests,
// testdata and build output aside), keyed "IMPORTPATH.Type.Field": a field's doc comment, else
// its line comment, on one line. They become the descriptions of the JSON Schemas' members
// (formatSchema), so that a format's reference says what each member means where its Go type
// does. Unexported types count too: the JSON types of cmd/ are unexported.
func fieldComments(repo string) (map[string]string, error) {
	out := map[string]string{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(repo, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); p != repo && (strings.HasPrefix(n, ".") || n == "testdata" || n == "build") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(repo, filepath.Dir(p))
		if err != nil {
			return err
		}
		pkg := modulePath
		if rel != "." {
			pkg = path.Join(modulePath, filepath.ToSlash(rel))
		}
		structComments(f, pkg, out)
		return nil
	})
	return out, err
}

// structComments adds the field comments of f's struct types (package pkg) to out, each field
// of the struct that a comment names by its Go name ("Missing those the kernel lacks") named by
// its JSON name instead, as the schema's reader knows it.
func structComments(f *ast.File, pkg string, out map[string]string) {
	ast.Inspect(f, func(n ast.Node) bool {
		ts, ok := n.(*ast.TypeSpec)
		if !ok {
			return true
		}
		st, ok := ts.Type.(*ast.StructType)
		if !ok {
			return true
		}
		names := jsonNames(st)
		for _, field := range st.Fields.List {
			text := field.Doc.Text()
			if text == "" {
				text = field.Comment.Text()
			}
			text = strings.Join(strings.Fields(text), " ")
			if text == "" {
				continue
			}
			text = goName.ReplaceAllStringFunc(text, func(w string) string {
				if j, ok := names[w]; ok && !acronym(w) {
					return j
				}
				return w
			})
			for _, name := range field.Names {
				out[pkg+"."+ts.Name.Name+"."+name.Name] = text
			}
		}
		return true
	})
}

// goName matches a word that may be an exported Go identifier.
var goName = regexp.MustCompile(`\b[A-Z][A-Za-z0-9]*\b`)

// jsonNames maps the fields of st to the names encoding/json gives them (a tag's, else the
// field's own); a field it leaves out ("-") or embeds is not mapped.
func jsonNames(st *ast.StructType) map[string]string {
	out := map[string]string{}
	for _, field := range st.Fields.List {
		tag := ""
		if field.Tag != nil {
			if t, err := strconv.Unquote(field.Tag.Value); err == nil {
				tag, _, _ = strings.Cut(reflect.StructTag(t).Get("json"), ",")
			}
		}
		if tag == "-" {
			continue
		}
		for _, name := range field.Names {
			if tag != "" {
				out[name.Name] = tag
			} else {
				out[name.Name] = name.Name
			}
		}
	}
	return out
}

// acronym says whether w is written in capitals (PID, CPU, CPUs): a word of the text more
// often than a field's name, and left as it is.
func acronym(w string) bool {
	w = strings.TrimSuffix(w, "s")
	return strings.ToUpper(w) == w
}
