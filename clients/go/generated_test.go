package treasury

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// generatedFiles are the files `go generate ./...` writes from
// http/openapi.json.
var generatedFiles = []string{"api/api.gen.go", "types.gen.go", "schemas_gen_test.go"}

// TestGeneratedCodeIsCurrent regenerates the client from http/openapi.json
// into a temporary directory and fails when the committed files differ: a
// change to the document fails this test until `go generate ./...` is run in
// clients/go.
func TestGeneratedCodeIsCurrent(t *testing.T) {
	tmp := t.TempDir()
	cmd := exec.Command("go", "run", "./internal/generate", "-root", ".", "-out", tmp)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go run ./internal/generate: %v\n%s", err, out)
	}
	for _, name := range generatedFiles {
		regenerated, err := os.ReadFile(filepath.Join(tmp, filepath.FromSlash(name)))
		if err != nil {
			t.Fatal(err)
		}
		committed, err := os.ReadFile(filepath.FromSlash(name))
		if err != nil {
			t.Fatalf("%s: %v (run go generate ./... in clients/go)", name, err)
		}
		if !bytes.Equal(committed, regenerated) {
			t.Errorf("%s is not what http/openapi.json generates (%s): run go generate ./... in clients/go",
				name, firstDifference(committed, regenerated))
		}
	}
}

func firstDifference(a, b []byte) string {
	la, lb := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
	for i := 0; i < len(la) || i < len(lb); i++ {
		var x, y string
		if i < len(la) {
			x = la[i]
		}
		if i < len(lb) {
			y = lb[i]
		}
		if x != y {
			return "first at line " + strconv.Itoa(i+1) + ": committed " + quote(x) + ", generated " + quote(y)
		}
	}
	return "same lines"
}

func quote(s string) string {
	if len(s) > 120 {
		s = s[:120] + "…"
	}
	return strconv.Quote(s)
}
