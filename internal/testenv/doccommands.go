package testenv

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// DocCommand is one command line of the docs that runs one of our
// binaries: README.md and docs/*.md, in their fenced shell blocks.
type DocCommand struct {
	Where string   // file:line, for messages
	Env   []string // the VAR=value words before the binary
	Args  []string // the words after it, redirections left out
	// Files are the files the doc wrote before the command with a
	// here-document (cat > NAME <<'EOF'), in order.
	Files []DocFile
}

// DocFile is a file a doc's commands write: its name and its text.
type DocFile struct {
	Name, Text string
}

// DocCommands returns every command of README.md and docs/*.md (under
// the repository root) that runs
// bin/NAME (or ./bin/NAME, or NAME as installed), so that a test can check that each still
// parses. A command is a line of a fenced block (sh, bash, shell or
// console; "$ " prompts allowed), continuation lines joined; a
// line holds several when they are chained with |, &&, || or ;. Comments
// and redirections are left out. A command with a placeholder the reader
// fills in ("...", "<...>", or a $VAR not set on the same line) is an
// error: the docs would show a command no test can run.
func DocCommands(root, name string) ([]DocCommand, error) {
	files, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	files = append([]string{filepath.Join(root, "README.md")}, files...)
	var out []DocCommand
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		rel, _ := filepath.Rel(root, f)
		lines, files := shellLines(b)
		for _, l := range lines {
			for _, seg := range splitChain(l.text) {
				c, ok, err := docCommand(seg, name)
				if err != nil {
					return nil, fmt.Errorf("%s:%d: %w", rel, l.n, err)
				}
				if ok {
					c.Where = fmt.Sprintf("%s:%d", rel, l.n)
					c.Files = files[:l.files]
					out = append(out, c)
				}
			}
		}
	}
	return out, nil
}

type shellLine struct {
	n     int // the first line's number
	text  string
	files int // how many here-document files were written before it
}

// shellLines returns the lines of the fenced shell blocks of a markdown
// file, continuations joined, comments and prompts removed, and the files
// its here-documents write (cat > NAME <<'EOF' ... EOF).
func shellLines(md []byte) ([]shellLine, []DocFile) {
	var (
		out   []shellLine
		files []DocFile
		cur   *shellLine
		here  *DocFile // the here-document being read
		end   string   // its terminator
	)
	fenced, shell := false, false
	sc := bufio.NewScanner(bytes.NewReader(md))
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if here != nil {
			if strings.TrimSpace(line) == end {
				files = append(files, *here)
				here = nil
			} else {
				here.Text += line + "\n"
			}
			continue
		}
		if t := strings.TrimSpace(line); strings.HasPrefix(t, "```") {
			fenced = !fenced
			lang := strings.TrimPrefix(t, "```")
			shell = fenced && (lang == "sh" || lang == "bash" || lang == "shell" || lang == "console")
			cur = nil
			continue
		}
		if !fenced || !shell {
			continue
		}
		text := stripComment(strings.TrimPrefix(strings.TrimSpace(line), "$ "))
		if name, term, ok := hereDocument(text); ok {
			here, end = &DocFile{Name: name}, term
			continue
		}
		cont := strings.HasSuffix(text, `\`)
		text = strings.TrimSuffix(text, `\`)
		if cur == nil {
			out = append(out, shellLine{n: n, text: text, files: len(files)})
			cur = &out[len(out)-1]
		} else {
			cur.text += " " + text
		}
		if !cont {
			cur = nil
		}
	}
	return out, files
}

// hereDocument reads "cat > NAME <<'END'" (or <<END, <<"END").
func hereDocument(line string) (name, end string, ok bool) {
	rest, ok := strings.CutPrefix(line, "cat > ")
	if !ok {
		return "", "", false
	}
	name, term, ok := strings.Cut(rest, " <<")
	if !ok {
		return "", "", false
	}
	end = strings.Trim(strings.TrimSpace(term), `'"`)
	return strings.TrimSpace(name), end, end != ""
}

// stripComment removes a # comment that starts a word outside quotes.
func stripComment(s string) string {
	var q byte
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case q != 0:
			if c == q {
				q = 0
			}
		case c == '\'' || c == '"':
			q = c
		case c == '#' && (i == 0 || s[i-1] == ' ' || s[i-1] == '\t'):
			return strings.TrimSpace(s[:i])
		}
	}
	return strings.TrimSpace(s)
}

// splitChain splits a line at |, &&, ||, ; and a trailing & outside
// quotes.
func splitChain(s string) []string {
	var out []string
	var q byte
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case q != 0:
			if c == q {
				q = 0
			}
		case c == '\'' || c == '"':
			q = c
		case c == '|' || c == ';' || (c == '&' && (i+1 == len(s) || s[i+1] == '&' || s[i+1] == ' ') && (i == 0 || s[i-1] != '>')):
			out = append(out, s[start:i])
			if i+1 < len(s) && (s[i+1] == '|' || s[i+1] == '&') {
				i++
			}
			start = i + 1
		}
	}
	return append(out, s[start:])
}

// docCommand parses one simple command; ok says whether it runs
// bin/name.
func docCommand(s, name string) (c DocCommand, ok bool, err error) {
	words, err := shellWords(s)
	if err != nil || len(words) == 0 {
		return c, false, nil
	}
	vars := map[string]string{}
	i := 0
	for ; i < len(words) && isAssignment(words[i]); i++ {
		k, v, _ := strings.Cut(words[i], "=")
		vars[k] = v
		c.Env = append(c.Env, words[i])
	}
	if i == len(words) || (words[i] != "bin/"+name && words[i] != "./bin/"+name && words[i] != name) {
		return c, false, nil
	}
	for j := i + 1; j < len(words); j++ {
		w := words[j]
		if isRedirect(w) {
			if w == ">" || w == ">>" || w == "2>" || w == "<" {
				j++ // the target is the next word
			}
			continue
		}
		if strings.Contains(w, "...") || strings.ContainsAny(w, "<>") {
			return c, false, fmt.Errorf("bin/%s: a placeholder %q: write a command that runs as shown", name, w)
		}
		if k, ok := variable(w); ok {
			v, set := vars[k]
			if !set {
				return c, false, fmt.Errorf("bin/%s: %q needs $%s, which the line does not set", name, w, k)
			}
			w = strings.ReplaceAll(strings.ReplaceAll(w, "${"+k+"}", v), "$"+k, v)
		}
		c.Args = append(c.Args, w)
	}
	return c, true, nil
}

func isAssignment(w string) bool {
	k, _, ok := strings.Cut(w, "=")
	if !ok || k == "" {
		return false
	}
	for _, r := range k {
		if !(r == '_' || r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

func isRedirect(w string) bool {
	for _, p := range []string{"2>&1", ">>", "2>", ">", "<"} {
		if strings.HasPrefix(w, p) {
			return true
		}
	}
	return false
}

// variable returns the name of the first $VAR or ${VAR} in w.
func variable(w string) (string, bool) {
	i := strings.IndexByte(w, '$')
	if i < 0 {
		return "", false
	}
	rest := strings.TrimPrefix(w[i+1:], "{")
	end := 0
	for end < len(rest) && (rest[end] == '_' || rest[end] >= 'A' && rest[end] <= 'Z' || rest[end] >= 'a' && rest[end] <= 'z' || rest[end] >= '0' && rest[end] <= '9') {
		end++
	}
	return rest[:end], end > 0
}

// shellWords splits s into words as sh would, for the quoting the docs
// use: single and double quotes, no expansion.
func shellWords(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	in, q := false, byte(0)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case q != 0 && c == q:
			q = 0
		case q != 0:
			cur.WriteByte(c)
		case c == '\'' || c == '"':
			q, in = c, true
		case c == ' ' || c == '\t':
			if in {
				words = append(words, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteByte(c)
			in = true
		}
	}
	if q != 0 {
		return nil, fmt.Errorf("unterminated quote in %q", s)
	}
	if in {
		words = append(words, cur.String())
	}
	return words, nil
}

// DocEnv is the environment of a documented command: its VAR=value
// words, and nothing else (not the test's own environment).
func DocEnv(assign []string) func(string) string {
	m := make(map[string]string, len(assign))
	for _, a := range assign {
		k, v, _ := strings.Cut(a, "=")
		m[k] = v
	}
	return func(k string) string { return m[k] }
}
