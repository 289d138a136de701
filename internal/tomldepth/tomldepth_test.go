package tomldepth

import (
	"errors"
	"strings"
	"testing"
)

// TestCheck: Max levels pass and one more is refused at its line; brackets
// in strings (basic, literal, multi-line, with escaped quotes) and comments
// do not count.
func TestCheck(t *testing.T) {
	if err := Check("x = " + strings.Repeat("[", Max) + strings.Repeat("]", Max) + "\n"); err != nil {
		t.Errorf("%d levels refused: %v", Max, err)
	}
	deep := "a = 1\n\nx = " + strings.Repeat("[{y=", Max/2) + "[" + strings.Repeat("}]", Max/2) + "]\n"
	var e *Error
	if err := Check(deep); !errors.As(err, &e) || e.Line != 3 || e.Max != Max {
		t.Errorf("%d levels: %v, want an *Error at line 3", Max+1, err)
	}
	quiet := `s = "[[[[\"[[[["` + "\n" + `l = '[[[['` + "\n" + `m = """` + "\n" + strings.Repeat("[", 100) + "\n" + `"""` + "\n# " + strings.Repeat("{", 100) + "\n"
	if err := Check(quiet + "x = " + strings.Repeat("[", Max) + strings.Repeat("]", Max)); err != nil {
		t.Errorf("brackets in strings or comments counted: %v", err)
	}
}
