package search_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The evaluation data under testdata/ (recorded catalogs and labelled queries,
// see testdata/README.md) is checked here on its own, so that a broken file
// fails loudly instead of silently skewing the ranking figures.

// recordedCatalog is the shape of one testdata/catalog/<server>.json file.
type recordedCatalog struct {
	Server       string            `json:"server"`
	Package      string            `json:"package"`
	Command      string            `json:"command"`
	Recorded     string            `json:"recorded"`
	Instructions *string           `json:"instructions"`
	Tools        []json.RawMessage `json:"tools"`
}

// recordedTool holds the fields of a tools/list entry that the checks need.
type recordedTool struct {
	Name        string          `json:"name"`
	Description *string         `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
}

// labelledQuery is one entry of testdata/queries.json.
type labelledQuery struct {
	ID    string   `json:"id"`
	Query string   `json:"query"`
	Want  *string  `json:"want"`
	Also  []string `json:"also"`
	Split string   `json:"split"`
	Note  string   `json:"note"`
}

// Minimum sizes the evaluation relies on (issue 12).
const (
	minTools        = 300
	minServers      = 12
	minQueries      = 200
	minNoMatch      = 40
	minTestNoMatch  = 20
	maxServerShare  = 0.15 // of all queries, for the servers of the wanted tools
	maxExposedName  = 64   // <server>__<tool>, the longest name a client accepts
	maxTestDataSize = 2 << 20
)

var (
	serverKey = regexp.MustCompile(`^[a-z0-9]+$`)
	queryID   = regexp.MustCompile(`^q[0-9]{3,}$`)
)

// loadCatalogs reads every catalog file and returns the exposed tool names
// (<server>__<tool>) mapped to their server, reporting every problem found.
func loadCatalogs(t *testing.T) (exposed map[string]string, servers int) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "catalog", "*.json"))
	if err != nil {
		t.Fatalf("list testdata/catalog: %v", err)
	}
	exposed = map[string]string{}
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatalf("read %s: %v", file, err)
		}
		var c recordedCatalog
		if err := json.Unmarshal(b, &c); err != nil {
			t.Errorf("%s: not a catalog file: %v", file, err)
			continue
		}
		if want := strings.TrimSuffix(filepath.Base(file), ".json"); c.Server != want {
			t.Errorf("%s: server key %q, want %q (the file name)", file, c.Server, want)
		}
		if !serverKey.MatchString(c.Server) {
			t.Errorf("%s: server key %q: use lower-case letters and digits only (it prefixes exposed names)", file, c.Server)
		}
		if !strings.Contains(c.Package, "@") || c.Command == "" || c.Recorded == "" || c.Instructions == nil {
			t.Errorf("%s: package (name@version), command, recorded and instructions must all be present", file)
		}
		if len(c.Tools) == 0 {
			t.Errorf("%s: no tools recorded", file)
		}
		servers++
		for i, raw := range c.Tools {
			var tool recordedTool
			if err := json.Unmarshal(raw, &tool); err != nil {
				t.Errorf("%s: tools[%d]: %v", file, i, err)
				continue
			}
			if tool.Name == "" || tool.Description == nil || len(tool.InputSchema) == 0 {
				t.Errorf("%s: tools[%d] (%q): name, description and inputSchema must be present", file, i, tool.Name)
			}
			name := c.Server + "__" + tool.Name
			if len(name) > maxExposedName {
				t.Errorf("%s: exposed name %q is longer than %d characters", file, name, maxExposedName)
			}
			if _, dup := exposed[name]; dup {
				t.Errorf("%s: tool %q recorded twice", file, tool.Name)
			}
			exposed[name] = c.Server
		}
	}
	return exposed, servers
}

func loadQueries(t *testing.T) []labelledQuery {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "queries.json"))
	if err != nil {
		t.Fatalf("read queries: %v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields() // a misspelt key ("wants") would silently drop a label
	var qs []labelledQuery
	if err := dec.Decode(&qs); err != nil {
		t.Fatalf("testdata/queries.json: %v", err)
	}
	return qs
}

func TestTestdataCatalogs(t *testing.T) {
	exposed, servers := loadCatalogs(t)
	if len(exposed) < minTools || servers < minServers {
		t.Errorf("catalogs hold %d tools from %d servers, want at least %d tools from %d servers", len(exposed), servers, minTools, minServers)
	}
	var size int64
	err := filepath.Walk("testdata", func(_ string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			size += info.Size()
		}
		return err
	})
	if err != nil {
		t.Fatalf("walk testdata: %v", err)
	}
	if size > maxTestDataSize {
		t.Errorf("testdata/ holds %d bytes, keep it under %d", size, maxTestDataSize)
	}
}

func TestTestdataQueries(t *testing.T) {
	exposed, _ := loadCatalogs(t)
	qs := loadQueries(t)

	ids := map[string]bool{}
	texts := map[string]string{}
	perSplit := map[string]int{}
	noMatch := map[string]int{}
	perServer := map[string]int{}
	for _, q := range qs {
		where := fmt.Sprintf("queries.json %s (%q)", q.ID, q.Query)
		if !queryID.MatchString(q.ID) {
			t.Errorf("%s: id must look like q001", where)
		}
		if ids[q.ID] {
			t.Errorf("%s: duplicate id", where)
		}
		ids[q.ID] = true
		norm := strings.Join(strings.Fields(strings.ToLower(q.Query)), " ")
		if norm == "" {
			t.Errorf("%s: empty query", where)
		}
		if other, dup := texts[norm]; dup {
			t.Errorf("%s: same query as %s", where, other)
		}
		texts[norm] = q.ID
		if q.Want == nil {
			t.Errorf("%s: want is missing (use \"\" for a request no tool serves)", where)
			continue
		}
		switch q.Split {
		case "dev", "test":
			perSplit[q.Split]++
		default:
			t.Errorf("%s: split %q, want dev or test", where, q.Split)
		}
		if *q.Want == "" {
			noMatch[q.Split]++
			if len(q.Also) > 0 {
				t.Errorf("%s: also %v on a query with no right tool", where, q.Also)
			}
			continue
		}
		server, ok := exposed[*q.Want]
		if !ok {
			t.Errorf("%s: want %q is not a recorded tool", where, *q.Want)
		}
		perServer[server]++
		seen := map[string]bool{*q.Want: true}
		for _, a := range q.Also {
			if _, ok := exposed[a]; !ok {
				t.Errorf("%s: also %q is not a recorded tool", where, a)
			}
			if seen[a] {
				t.Errorf("%s: %q named twice in want/also", where, a)
			}
			seen[a] = true
		}
	}

	total := len(qs)
	allNoMatch := noMatch["dev"] + noMatch["test"]
	if total < minQueries || allNoMatch < minNoMatch {
		t.Errorf("%d queries, %d with no right tool; want at least %d and %d", total, allNoMatch, minQueries, minNoMatch)
	}
	if perSplit["dev"] == 0 || perSplit["test"] == 0 {
		t.Errorf("splits dev=%d test=%d: both must be present", perSplit["dev"], perSplit["test"])
	}
	if 2*perSplit["test"] < total {
		t.Errorf("test split holds %d of %d queries, want at least half", perSplit["test"], total)
	}
	if noMatch["test"] < minTestNoMatch {
		t.Errorf("test split has %d queries with no right tool, want at least %d", noMatch["test"], minTestNoMatch)
	}
	for server, n := range perServer {
		if float64(n) > maxServerShare*float64(total) {
			t.Errorf("server %s is the answer of %d of %d queries, more than %.0f%%", server, n, total, 100*maxServerShare)
		}
	}
}
