package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/spf13/cobra"
)

// docFiles are the pages whose names this test checks: README.md and
// docs/*.md (CHANGELOG.md is a record of the past and names what is gone).
func docFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("../../docs/*.md")
	if err != nil || len(files) == 0 {
		t.Fatalf("no docs: %v", err)
	}
	for i, f := range files {
		files[i] = strings.TrimPrefix(f, "../../")
	}
	return append([]string{"README.md"}, files...)
}

// docRef is a piece of code named in a doc: an inline code span, or a line
// of a fenced block.
type docRef struct {
	doc  string
	line int
	text string
}

var codeSpan = regexp.MustCompile("`([^`\n]+)`")

// docRefs returns the code spans and fenced code lines of doc.
func docRefs(doc, text string) []docRef {
	var refs []docRef
	fenced := false
	for i, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			refs = append(refs, docRef{doc, i + 1, l})
			continue
		}
		for _, m := range codeSpan.FindAllStringSubmatch(l, -1) {
			refs = append(refs, docRef{doc, i + 1, m[1]})
		}
	}
	return refs
}

// What README.md and docs/*.md name must exist: the files and links they
// point to (and the section of a link), the make targets, the tests and
// benchmarks, and the delegate and claims-agent command lines with their
// flags. A rename in the code that the docs did not follow fails here.
func TestDocsNameWhatExists(t *testing.T) {
	root := "../.."
	texts := map[string]string{}
	var refs []docRef
	for _, d := range docFiles(t) {
		texts[d] = readDoc(t, d)
		refs = append(refs, docRefs(d, texts[d])...)
	}

	// Each check must have found something to check, or its pattern no
	// longer matches what the docs write.
	some := func(t *testing.T, n int, what string) {
		t.Helper()
		if n == 0 {
			t.Errorf("no %s found in the docs: the pattern no longer matches them", what)
		}
	}

	t.Run("links", func(t *testing.T) {
		n := 0
		for d, text := range texts {
			n += len(mdLink.FindAllString(text, -1))
			for _, bad := range brokenLinks(root, d, text) {
				t.Errorf("%s: %s", d, bad)
			}
		}
		some(t, n, "links")
	})

	t.Run("paths", func(t *testing.T) {
		top := topLevel(t, root)
		n := 0
		for _, r := range refs {
			for _, p := range repoPaths(r.text, top) {
				n++
				if !pathExists(root, p) {
					t.Errorf("%s:%d: %s does not exist (in %q)", r.doc, r.line, p, r.text)
				}
			}
		}
		some(t, n, "paths")
	})

	t.Run("Go files", func(t *testing.T) {
		// A Go file named alone (the flow's "boundary.go") is a file of
		// some package.
		files := goFiles(t, root)
		n := 0
		for _, r := range refs {
			for _, m := range goFileName.FindAllStringSubmatch(r.text, -1) {
				n++
				if !files[m[1]] {
					t.Errorf("%s:%d: no file %s in the repository (in %q)", r.doc, r.line, m[1], r.text)
				}
			}
		}
		some(t, n, "Go file names")
	})

	t.Run("make targets", func(t *testing.T) {
		targets := makeTargets(t, root)
		n := 0
		for _, r := range refs {
			for _, m := range makeTarget.FindAllStringSubmatch(r.text, -1) {
				n++
				if !targets[m[1]] {
					t.Errorf("%s:%d: the Makefile has no target %q (in %q)", r.doc, r.line, m[1], r.text)
				}
			}
		}
		some(t, n, "make targets")
	})

	t.Run("tests", func(t *testing.T) {
		funcs := goFuncs(t, root)
		n := 0
		for _, r := range refs {
			for _, name := range testName.FindAllString(r.text, -1) {
				n++
				if !funcs[name] {
					t.Errorf("%s:%d: no func %s in the repository (in %q)", r.doc, r.line, name, r.text)
				}
			}
		}
		some(t, n, "tests")
	})

	t.Run("identifiers", func(t *testing.T) {
		// pkg.Name and pkg.Type.Member, pkg a package of this module:
		// declared there (a method or a struct field for Member).
		decls := packageDecls(t, root)
		n := 0
		for _, r := range refs {
			for _, m := range qualified.FindAllStringSubmatch(r.text, -1) {
				pkg, name, member := m[1], m[2], m[3]
				if decls[pkg] == nil || strings.ToUpper(name) == name || externalNames[m[0]] {
					continue // not this module's, or a placeholder (mcp.TEMPLATE.UUID)
				}
				n++
				switch {
				case !decls[pkg][name]:
					t.Errorf("%s:%d: package %s declares no %s (in %q)", r.doc, r.line, pkg, name, r.text)
				case member != "" && !decls[pkg][name+"."+member]:
					t.Errorf("%s:%d: %s.%s has no field or method %s (in %q)", r.doc, r.line, pkg, name, member, r.text)
				}
			}
		}
		some(t, n, "qualified identifiers")
	})

	t.Run("command lines", func(t *testing.T) {
		cli := newRoot()
		cli.InitDefaultHelpCmd()
		cli.InitDefaultCompletionCmd()
		agentFlags := claimsAgentFlags(t, root)
		lines, agentLines := 0, 0
		for _, r := range refs {
			if commandWords("delegate", r.text) != nil {
				lines++
			}
			if commandWords("claims-agent", r.text) != nil {
				agentLines++
			}
			for _, bad := range checkDelegateLine(cli, r.text) {
				t.Errorf("%s:%d: %s (in %q)", r.doc, r.line, bad, r.text)
			}
			for _, f := range commandFlags("claims-agent", r.text) {
				if !agentFlags[f] {
					t.Errorf("%s:%d: claims-agent has no flag --%s (in %q)", r.doc, r.line, f, r.text)
				}
			}
		}
		some(t, lines, "delegate command lines")
		some(t, agentLines, "claims-agent command lines")
	})
}

var (
	mdLink     = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	mdHeading  = regexp.MustCompile(`(?m)^#{1,6} +(.+?) *$`)
	makeTarget = regexp.MustCompile(`\bmake ([a-z][a-z0-9-]*)`)
	testName   = regexp.MustCompile(`\b(?:Test|Benchmark|Fuzz)[A-Z]\w*`)
	goFileName = regexp.MustCompile(`(?:^|[^\w/.-])([a-z0-9_]+\.go)\b`)
	goFunc     = regexp.MustCompile(`(?m)^func (?:\([^)]*\) )?([A-Z]\w*)`)
	qualified  = regexp.MustCompile(`\b([a-z][a-z0-9]*)\.([A-Z]\w*)(?:\.([A-Z]\w*))?`)
)

// externalNames are qualified names in the docs whose package is another
// module's of the same name as one of this module's.
var externalNames = map[string]bool{
	"client.GrpcCompressionGzip": true, // go.temporal.io/sdk/client
}

// packageDecls maps the name of each package of this module (its
// directory's name) to what it declares: top-level names, and Type.Member
// for the fields and methods of its types. Test files are left out.
func packageDecls(t *testing.T, root string) map[string]map[string]bool {
	t.Helper()
	decls := map[string]map[string]bool{}
	fset := token.NewFileSet()
	walkGo(t, root, func(p string, src []byte) {
		if strings.HasSuffix(p, "_test.go") || strings.Contains(p, "testdata") {
			return
		}
		f, err := parser.ParseFile(fset, p, src, parser.SkipObjectResolution)
		if err != nil {
			t.Errorf("%s: %v", p, err)
			return
		}
		pkg := filepath.Base(filepath.Dir(p))
		if decls[pkg] == nil {
			decls[pkg] = map[string]bool{}
		}
		d := decls[pkg]
		for _, decl := range f.Decls {
			switch decl := decl.(type) {
			case *ast.FuncDecl:
				if decl.Recv == nil {
					d[decl.Name.Name] = true
					continue
				}
				typ := decl.Recv.List[0].Type
				if star, ok := typ.(*ast.StarExpr); ok {
					typ = star.X
				}
				if id, ok := typ.(*ast.Ident); ok {
					d[id.Name+"."+decl.Name.Name] = true
				}
			case *ast.GenDecl:
				for _, spec := range decl.Specs {
					switch spec := spec.(type) {
					case *ast.ValueSpec:
						for _, id := range spec.Names {
							d[id.Name] = true
						}
					case *ast.TypeSpec:
						d[spec.Name.Name] = true
						if st, ok := spec.Type.(*ast.StructType); ok {
							for _, field := range st.Fields.List {
								for _, id := range field.Names {
									d[spec.Name.Name+"."+id.Name] = true
								}
							}
						}
					}
				}
			}
		}
	})
	return decls
}

// brokenLinks returns the relative links of doc (a file of root) whose
// file, or whose section (#anchor, in a Markdown file), does not exist.
func brokenLinks(root, doc, text string) []string {
	var bad []string
	for _, m := range mdLink.FindAllStringSubmatch(text, -1) {
		link := m[1]
		if strings.Contains(link, "://") || strings.HasPrefix(link, "mailto:") {
			continue
		}
		file, anchor, _ := strings.Cut(link, "#")
		target := doc
		if file != "" {
			target = filepath.Join(filepath.Dir(doc), file)
		}
		b, err := os.ReadFile(filepath.Join(root, target))
		if err != nil {
			if fi, serr := os.Stat(filepath.Join(root, target)); serr != nil || !fi.IsDir() {
				bad = append(bad, "link "+link+": "+target+" does not exist")
			}
			continue
		}
		if anchor != "" && strings.HasSuffix(target, ".md") && !slices.Contains(anchors(string(b)), anchor) {
			bad = append(bad, "link "+link+": "+target+" has no section #"+anchor)
		}
	}
	return bad
}

// anchors are the GitHub anchors of a Markdown page's headings: lower
// case, spaces as hyphens, punctuation other than - and _ dropped.
func anchors(text string) []string {
	var out []string
	for _, m := range mdHeading.FindAllStringSubmatch(text, -1) {
		var b strings.Builder
		for _, r := range strings.ToLower(m[1]) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		out = append(out, b.String())
	}
	return out
}

// topLevel are the names at the repository's root a doc's path may start
// with: what is checked in, not what a build or a run makes (bin/,
// .delegate/, test-results/).
func topLevel(t *testing.T, root string) map[string]bool {
	t.Helper()
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	top := map[string]bool{}
	for _, e := range entries {
		if n := e.Name(); !strings.HasPrefix(n, ".") && n != "bin" && n != "test-results" {
			top[n] = true
		}
	}
	return top
}

// repoPaths returns the words of text that name a path in the repository:
// they start with a top-level name followed by a slash, or are a top-level
// file (Makefile, docker-compose.yml). Placeholders (<N>, *, ...) are not
// paths.
func repoPaths(text string, top map[string]bool) []string {
	var out []string
	for _, w := range strings.FieldsFunc(text, func(r rune) bool {
		return unicode.IsSpace(r) || strings.ContainsRune("()[]{}\"',;=|<>`", r)
	}) {
		w = strings.TrimPrefix(strings.TrimRight(w, ".:"), "./")
		if strings.ContainsAny(w, "*…$") || strings.Contains(w, "...") || strings.Contains(w, "://") {
			continue
		}
		first, rest, slash := strings.Cut(w, "/")
		if !top[first] || (!slash && strings.IndexFunc(first, unicode.IsUpper) < 0 && !strings.Contains(first, ".")) {
			continue // a word that happens to be a directory's name ("docs", "client")
		}
		if slash && rest == "" {
			w = first
		}
		if strings.Contains(w, "#") {
			w, _, _ = strings.Cut(w, "#")
		}
		out = append(out, w)
	}
	return out
}

// pathExists: p is a file or directory of root, or names a package's
// identifier (internal/bench.Result: the directory internal/bench).
func pathExists(root, p string) bool {
	if _, err := os.Stat(filepath.Join(root, p)); err == nil {
		return true
	}
	dir, base := filepath.Split(p)
	if i := strings.Index(base, "."); i > 0 && dir != "" {
		if fi, err := os.Stat(filepath.Join(root, dir, base[:i])); err == nil && fi.IsDir() {
			return true
		}
	}
	return false
}

func makeTargets(t *testing.T, root string) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	targets := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^([a-z][a-z0-9-]*):`).FindAllStringSubmatch(string(b), -1) {
		targets[m[1]] = true
	}
	return targets
}

// goFiles are the names (without directory) of the repository's Go files.
func goFiles(t *testing.T, root string) map[string]bool {
	t.Helper()
	files := map[string]bool{}
	walkGo(t, root, func(p string, _ []byte) { files[filepath.Base(p)] = true })
	return files
}

// walkGo calls fn with every Go file of the repository and its content
// (hidden directories and node_modules left out).
func walkGo(t *testing.T, root string, fn func(path string, src []byte)) {
	t.Helper()
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && p != root || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(p, ".go") {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			fn(p, b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// goFuncs are the exported functions and methods declared in the
// repository's Go files (tests included).
func goFuncs(t *testing.T, root string) map[string]bool {
	t.Helper()
	funcs := map[string]bool{}
	walkGo(t, root, func(_ string, src []byte) {
		for _, m := range goFunc.FindAllSubmatch(src, -1) {
			funcs[string(m[1])] = true
		}
	})
	return funcs
}

// claimsAgentFlags are the flags cmd/claims-agent defines (package flag).
func claimsAgentFlags(t *testing.T, root string) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "cmd/claims-agent/main.go"))
	if err != nil {
		t.Fatal(err)
	}
	flags := map[string]bool{"help": true, "h": true}
	for _, m := range regexp.MustCompile(`flag\.\w+\("([a-z][a-z0-9-]*)"`).FindAllStringSubmatch(string(b), -1) {
		flags[m[1]] = true
	}
	return flags
}

// commandWords returns the words of text from the word that runs program
// up to the end of that command (a pipe, a redirection, a ; or &&, a
// closing parenthesis), or nil when text runs no program. The program is
// ./bin/program or bin/program anywhere (npx ... ./bin/delegate mcp), or
// program as the first word (after VAR=value assignments): prose that
// says "delegate starts ..." is not a command line.
func commandWords(program, text string) []string {
	words := strings.Fields(text)
	first := true
	for i, w := range words {
		w = strings.TrimLeft(w, "<(")
		runs := w == "./bin/"+program || w == "bin/"+program || (first && w == program)
		if first && !strings.Contains(w, "=") {
			first = false
		}
		if !runs {
			continue
		}
		var out []string
		for _, a := range words[i+1:] {
			if a == "|" || a == "&&" || a == ";" || a == "||" || strings.HasPrefix(a, ">") || strings.HasPrefix(a, "2>") {
				break
			}
			end := strings.HasSuffix(a, ")") && !strings.Contains(a, "(")
			out = append(out, strings.TrimRight(a, ")"))
			if end {
				break
			}
		}
		return out
	}
	return nil
}

var longFlag = regexp.MustCompile(`^[\[(]*--([a-z][a-z0-9-]*)`)

// commandFlags returns the long flags (without --) of program's command in
// text.
func commandFlags(program, text string) []string {
	var flags []string
	for _, w := range commandWords(program, text) {
		if m := longFlag.FindStringSubmatch(w); m != nil {
			flags = append(flags, m[1])
		}
	}
	return flags
}

// checkDelegateLine checks a delegate command line in text: its command
// exists, and it takes every flag named (a connection flag only where the
// command dials Temporal: dev, card, bench and health refuse them).
func checkDelegateLine(root *cobra.Command, text string) []string {
	words := commandWords("delegate", text)
	if words == nil {
		return nil
	}
	// The command path: the words before the first flag or placeholder
	// that name subcommands.
	cmd := root
	for _, w := range words {
		if strings.HasPrefix(w, "-") || strings.HasPrefix(w, "[") {
			break
		}
		sub, _, err := cmd.Find([]string{w})
		if err != nil || sub == cmd {
			if cmd == root && strings.IndexFunc(w, unicode.IsLower) >= 0 && strings.IndexFunc(w, unicode.IsUpper) < 0 && !strings.ContainsAny(w, "$.") {
				return []string{"delegate has no command " + w}
			}
			break
		}
		cmd = sub
	}
	var bad []string
	for _, w := range words {
		name := ""
		if m := longFlag.FindStringSubmatch(w); m != nil {
			name = m[1]
		} else if m := regexp.MustCompile(`^[\[(]*-([a-zA-Z])\b`).FindStringSubmatch(w); m != nil {
			if cmd.Flags().ShorthandLookup(m[1]) == nil && cmd.InheritedFlags().ShorthandLookup(m[1]) == nil {
				bad = append(bad, cmd.CommandPath()+" has no flag -"+m[1])
			}
			continue
		} else {
			continue
		}
		switch {
		case name == "help" || (name == "version" && cmd == root):
		case slices.Contains(connectionFlags, name) && cmd != root:
			// Defined on the root for every command; taken only by those
			// that dial Temporal (refuseUnused).
			if cmd.Annotations[dialsTemporal] == "" && (name != "encryption-key-file" || cmd.Annotations[usesKeys] == "") {
				bad = append(bad, cmd.CommandPath()+" refuses the connection flag --"+name)
			}
		case cmd.Flags().Lookup(name) != nil || cmd.PersistentFlags().Lookup(name) != nil || cmd.InheritedFlags().Lookup(name) != nil:
		default:
			bad = append(bad, cmd.CommandPath()+" has no flag --"+name)
		}
	}
	return bad
}
