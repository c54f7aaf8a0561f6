// Package docs holds the project's prose; its test keeps the prose honest.
package docs

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Every test the security review cites exists.
func TestSecurityReviewCitesRealTests(t *testing.T) {
	review, err := os.ReadFile("SECURITY.md")
	if err != nil {
		t.Fatal(err)
	}
	defined := map[string]bool{}
	funcRE := regexp.MustCompile(`(?m)^func ((?:Test|Fuzz)\w+)\(`)
	err = filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) && path != ".." {
			return filepath.SkipDir
		}
		if strings.HasSuffix(path, "_test.go") {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, m := range funcRE.FindAllSubmatch(b, -1) {
				defined[string(m[1])] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	cited := regexp.MustCompile("`((?:Test|Fuzz)\\w+)`").FindAllStringSubmatch(string(review), -1)
	if len(cited) < 10 {
		t.Fatalf("the review cites only %d tests", len(cited))
	}
	for _, c := range cited {
		if !defined[c[1]] {
			t.Errorf("SECURITY.md cites %s, which no test defines", c[1])
		}
	}
}
