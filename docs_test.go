package ndbg_test

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDocLinks checks that every relative link in every Markdown file of
// the repository resolves to a file or folder inside it (and, for a link
// to a heading, that the heading exists), and that every path to a .md
// file named in a Go comment exists: a user's clone has nothing beside it,
// so a document may point only at what the repository holds.
func TestDocLinks(t *testing.T) {
	root, err := filepath.Abs(".")
	require.NoError(t, err)
	mds, gos := repoFiles(t, root)
	require.NotEmpty(t, mds)
	anchors := map[string]map[string]bool{} // file -> heading anchors, filled lazily
	anchorsOf := func(path string) map[string]bool {
		if a, ok := anchors[path]; ok {
			return a
		}
		a := headingAnchors(t, path)
		anchors[path] = a
		return a
	}
	links := 0
	for _, md := range mds {
		rel, _ := filepath.Rel(root, md)
		for _, l := range markdownLinks(t, md) {
			target, frag, _ := strings.Cut(l.target, "#")
			dest := md
			if target != "" {
				dest = filepath.Join(filepath.Dir(md), filepath.FromSlash(target))
				if r, err := filepath.Rel(root, dest); err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
					assert.Fail(t, "link leaves the repository", "%s:%d: %s", rel, l.line, l.target)
					continue
				}
				if _, err := os.Stat(dest); err != nil {
					assert.Fail(t, "broken link", "%s:%d: %s (no such file)", rel, l.line, l.target)
					continue
				}
			}
			links++
			if frag != "" && strings.HasSuffix(dest, ".md") {
				assert.True(t, anchorsOf(dest)[frag], "%s:%d: %s: no heading with anchor #%s", rel, l.line, l.target, frag)
			}
		}
	}
	mdPath := regexp.MustCompile(`[A-Za-z0-9_.-]+(?:/[A-Za-z0-9_.-]+)+\.md\b`)
	for _, g := range gos {
		rel, _ := filepath.Rel(root, g)
		forEachLine(t, g, func(n int, line string) {
			_, comment, ok := strings.Cut(line, "//")
			if !ok {
				return
			}
			for _, p := range mdPath.FindAllString(comment, -1) {
				// Only paths into the repository's own folders: not
				// placeholders such as DIR/report.md.
				if st, err := os.Stat(filepath.Join(root, strings.Split(p, "/")[0])); err != nil || !st.IsDir() {
					continue
				}
				fromRoot := filepath.Join(root, filepath.FromSlash(p))
				fromDir := filepath.Join(filepath.Dir(g), filepath.FromSlash(p))
				_, e1 := os.Stat(fromRoot)
				_, e2 := os.Stat(fromDir)
				assert.True(t, e1 == nil || e2 == nil, "%s:%d: the comment names %s, which does not exist", rel, n, p)
			}
		})
	}
	t.Logf("%d Markdown files, %d relative links, %d Go files", len(mds), links, len(gos))
}

// TestHeadingAnchor pins the anchor rule against GitHub's for a few
// headings.
func TestHeadingAnchor(t *testing.T) {
	for h, want := range map[string]string{
		"7. A first experiment: what a tiny model learns on these CPUs": "7-a-first-experiment-what-a-tiny-model-learns-on-these-cpus",
		"The `--compare` flag":         "the---compare-flag",
		"Two commands":                 "two-commands",
		"CPython tracing facts (3.11)": "cpython-tracing-facts-311",
	} {
		assert.Equal(t, want, headingAnchor(h), h)
	}
}

// repoFiles returns the Markdown and Go files under root, leaving out
// hidden folders (.git, .cache) and node_modules, which are not part of
// the repository.
func repoFiles(t *testing.T, root string) (mds, gos []string) {
	t.Helper()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		switch filepath.Ext(path) {
		case ".md":
			mds = append(mds, path)
		case ".go":
			gos = append(gos, path)
		}
		return nil
	})
	require.NoError(t, err)
	return mds, gos
}

// forEachLine calls fn with each line of the file and its number.
func forEachLine(t *testing.T, path string, fn func(n int, line string)) {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		fn(n, sc.Text())
	}
	require.NoError(t, sc.Err(), path)
}

// proseLines calls fn with each line of a Markdown file outside fenced
// code blocks, and its number.
func proseLines(t *testing.T, path string, fn func(n int, line string)) {
	t.Helper()
	fence := ""
	forEachLine(t, path, func(n int, line string) {
		trim := strings.TrimSpace(line)
		if fence != "" {
			if strings.HasPrefix(trim, fence) {
				fence = ""
			}
			return
		}
		if strings.HasPrefix(trim, "```") || strings.HasPrefix(trim, "~~~") {
			fence = trim[:3]
			return
		}
		fn(n, line)
	})
}

type mdLink struct {
	line   int
	target string
}

var (
	inlineLink = regexp.MustCompile(`\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)`)
	refLink    = regexp.MustCompile(`^\s*\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+"[^"]*")?\s*$`)
	codeSpan   = regexp.MustCompile("`+[^`]*`+")
	hasScheme  = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
)

// markdownLinks returns the relative link targets of a Markdown file
// (inline links, images and reference definitions), outside code blocks and
// code spans; absolute URLs (scheme:...) are left out.
func markdownLinks(t *testing.T, path string) []mdLink {
	var out []mdLink
	proseLines(t, path, func(n int, line string) {
		line = codeSpan.ReplaceAllString(line, "")
		var targets []string
		for _, m := range inlineLink.FindAllStringSubmatch(line, -1) {
			targets = append(targets, m[1])
		}
		if m := refLink.FindStringSubmatch(line); m != nil {
			targets = append(targets, m[1])
		}
		for _, tg := range targets {
			if hasScheme.MatchString(tg) {
				continue
			}
			out = append(out, mdLink{n, tg})
		}
	})
	return out
}

// headingAnchors returns the anchors GitHub gives the headings of a
// Markdown file (a repeated heading gets -1, -2, ...).
func headingAnchors(t *testing.T, path string) map[string]bool {
	seen := map[string]int{}
	out := map[string]bool{}
	proseLines(t, path, func(_ int, line string) {
		if !strings.HasPrefix(line, "#") {
			return
		}
		text := strings.TrimSpace(strings.TrimLeft(line, "#"))
		a := headingAnchor(text)
		if k := seen[a]; k > 0 {
			out[a+"-"+strconv.Itoa(k)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	})
	return out
}

// headingAnchor is GitHub's anchor of a heading: lower case, letters,
// digits, '-' and '_' kept, spaces made '-', everything else dropped.
func headingAnchor(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}
