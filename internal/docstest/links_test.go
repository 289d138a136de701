package docstest

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// checkLinks: every relative link resolves to a file or folder under root,
// and its #anchor, if any, to a heading of that Markdown file. It also
// returns, per page, the pages of the docs it links to.
func checkLinks(root string, docs []*doc) (problems []string, linksTo map[string]map[string]bool) {
	byRel := map[string]*doc{}
	for _, d := range docs {
		byRel[d.rel] = d
	}
	linksTo = map[string]map[string]bool{}
	for _, d := range docs {
		linksTo[d.rel] = map[string]bool{}
		for _, l := range d.prose {
			text := codeRE.ReplaceAllString(l.text, "")
			for _, m := range targetRE.FindAllStringSubmatch(text, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				file, anchor, _ := strings.Cut(target, "#")
				rel := d.rel
				if file != "" {
					rel = path.Clean(path.Join(path.Dir(d.rel), file))
					if rel == ".." || strings.HasPrefix(rel, "../") {
						problems = append(problems, fmt.Sprintf("%s:%d: link %s leaves the repository", d.rel, l.n, target))
						continue
					}
					if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(rel))); err != nil {
						problems = append(problems, fmt.Sprintf("%s:%d: link %s: no such file %s", d.rel, l.n, target, rel))
						continue
					}
				}
				linksTo[d.rel][rel] = true
				if anchor == "" {
					continue
				}
				to := byRel[rel]
				if to == nil {
					if !strings.HasSuffix(rel, ".md") {
						problems = append(problems, fmt.Sprintf("%s:%d: link %s: an anchor in a file that is not Markdown", d.rel, l.n, target))
						continue
					}
					var err error
					if to, err = parse(root, rel); err != nil {
						problems = append(problems, fmt.Sprintf("%s:%d: link %s: %v", d.rel, l.n, target, err))
						continue
					}
				}
				if !to.anchors[anchor] {
					problems = append(problems, fmt.Sprintf("%s:%d: link %s: %s has no heading with anchor #%s", d.rel, l.n, target, rel, anchor))
				}
			}
		}
	}
	return problems, linksTo
}

// checkNavigation: the README links every page of docs/, and every page
// links back to the README.
func checkNavigation(docs []*doc, linksTo map[string]map[string]bool) []string {
	var problems []string
	for _, d := range docs {
		if d.rel == "README.md" {
			continue
		}
		if !linksTo["README.md"][d.rel] {
			problems = append(problems, fmt.Sprintf("README.md: does not link %s", d.rel))
		}
		if !linksTo[d.rel]["README.md"] {
			problems = append(problems, fmt.Sprintf("%s: does not link back to README.md", d.rel))
		}
	}
	return problems
}
