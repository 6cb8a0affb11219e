package bank

import (
	"embed"
	"fmt"
	"strings"
)

// The open-ended items are curated text, one file per bucket, embedded in
// the binary. A file is a list of items:
//
//	### decision-01 decision
//	Q: The question, on one or more lines.
//	N: The reference note: what a good answer covers.
//
// The id ("decision-01") is the item's family: every curated item is a
// template of its own. The task is one of decision, planning, critique and
// unknowable.
//
//go:embed open/*.txt
var openFiles embed.FS

var openTasks = map[string]TaskType{
	"decision": TaskDecision, "planning": TaskPlanning, "critique": TaskCritique, "unknowable": TaskUnknowable,
}

func openItems(version string) ([]Item, error) {
	var out []Item
	for _, b := range Buckets {
		data, err := openFiles.ReadFile("open/" + string(b) + ".txt")
		if err != nil {
			return nil, fmt.Errorf("bank: reading open items of %s: %w", b, err)
		}
		items, err := parseOpen(version, b, string(data))
		if err != nil {
			return nil, err
		}
		out = append(out, items...)
	}
	return out, nil
}

func parseOpen(version string, b Bucket, text string) ([]Item, error) {
	var out []Item
	seen := map[string]bool{}
	blocks := strings.Split("\n"+text, "\n### ")
	for _, block := range blocks[1:] {
		head, body, _ := strings.Cut(block, "\n")
		f := strings.Fields(head)
		if len(f) != 2 {
			return nil, fmt.Errorf("bank: open/%s.txt: bad heading %q", b, head)
		}
		id, task := f[0], openTasks[f[1]]
		if task == "" || seen[id] {
			return nil, fmt.Errorf("bank: open/%s.txt: item %q: unknown task or repeated id", b, id)
		}
		seen[id] = true
		var q, n []string
		var cur *[]string
		for _, line := range strings.Split(body, "\n") {
			switch {
			case strings.HasPrefix(line, "Q:"):
				cur = &q
				line = strings.TrimPrefix(line, "Q:")
			case strings.HasPrefix(line, "N:"):
				cur = &n
				line = strings.TrimPrefix(line, "N:")
			}
			if line = strings.TrimSpace(line); line != "" && cur != nil {
				*cur = append(*cur, line)
			}
		}
		if len(q) == 0 || len(n) == 0 {
			return nil, fmt.Errorf("bank: open/%s.txt: item %q needs a question (Q:) and a note (N:)", b, id)
		}
		out = append(out, Item{
			ID: itemID(version, b, id, 0), Version: version, Bucket: b, Family: id, Kind: Open, Task: task,
			Question: strings.Join(q, " "), Note: strings.Join(n, " "),
		})
	}
	return out, nil
}
