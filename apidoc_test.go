package ndbg_test

import (
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"io/fs"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPredictionFieldsDocumented: what `go doc github.com/ndbg/ndbg
// Prediction` and `... Confidence` show says what a prediction's
// probabilities are, on the public types: Confidence was an alias of an
// internal type, so go doc showed none of its fields, and Prediction's doc
// did not say that p.State, p.Line and p.Value are probabilities.
func TestPredictionFieldsDocumented(t *testing.T) {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", func(fi fs.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, parser.ParseComments)
	require.NoError(t, err)
	p := doc.New(pkgs["ndbg"], "github.com/ndbg/ndbg", 0)
	types := map[string]*doc.Type{}
	for _, ty := range p.Types {
		types[ty.Name] = ty
	}
	pred := types["Prediction"]
	require.NotNil(t, pred)
	for _, f := range []string{"p.State", "p.Event", "p.Line", "p.Locals[i]", "p.Value", "probabilities"} {
		assert.Contains(t, pred.Doc, f, "Prediction's doc")
	}
	conf := types["Confidence"]
	require.NotNil(t, conf)
	spec := conf.Decl.Specs[0].(*ast.TypeSpec)
	require.False(t, spec.Assign.IsValid(), "Confidence is a type of the public package, not an alias of an internal one")
	st, ok := spec.Type.(*ast.StructType)
	require.True(t, ok)
	documented := map[string]bool{}
	for _, f := range st.Fields.List {
		for _, n := range f.Names {
			documented[n.Name] = f.Doc != nil && strings.Contains(f.Doc.Text(), n.Name)
		}
	}
	for _, name := range []string{"State", "Event", "Line", "Locals", "Value", "Cut"} {
		assert.True(t, documented[name], "Confidence.%s has a doc comment", name)
	}
}
