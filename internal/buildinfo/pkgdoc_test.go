package buildinfo

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPackageDocs checks that every package in the module has a package
// comment (tailscale's pkgdoc_test).
func TestPackageDocs(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	err = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		switch name := d.Name(); {
		case name == "testdata" || name == "tools" || strings.HasPrefix(name, ".") && path != root:
			return filepath.SkipDir
		}
		files, err := filepath.Glob(filepath.Join(path, "*.go"))
		if err != nil {
			return err
		}
		fset := token.NewFileSet()
		seen, documented := "", false
		for _, file := range files {
			if strings.HasSuffix(file, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, file, nil, parser.ParseComments|parser.PackageClauseOnly)
			if err != nil {
				return err
			}
			seen = f.Name.Name
			if f.Doc != nil && strings.TrimSpace(f.Doc.Text()) != "" {
				documented = true
			}
		}
		if seen != "" && !documented {
			rel, _ := filepath.Rel(root, path)
			t.Errorf("package %s (%s) has no package comment", seen, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
