package jsonscan

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
)

// validCases are inputs at each edge of the grammar; want is what
// encoding/json.Valid says, checked by TestValid too.
var validCases = []struct {
	in   string
	want bool
}{
	{``, false},
	{` `, false},
	{`null`, true},
	{` true `, true},
	{"\t\r\nfalse\n", true},
	{`nul`, false},
	{`nulll`, false},
	{`True`, false},
	{`"`, false},
	{`""`, true},
	{`"a\"b"`, true},
	{`"a\\"`, true},
	{`"a\\\"`, false},
	{`"\/\b\f\n\r\t\u00e9\uD83D\uDE00"`, true},
	{`"\x"`, false},
	{`"\u12"`, false},
	{`"\u12G4"`, false},
	{`"\u"`, false},
	{`"\`, false},
	{"\"tab\there\"", false},
	{"\"nul\x00\"", false},
	{"\"del\x7f\"", true},
	{"\"bad utf-8 \xff\xfe\"", true},
	{"\"long string with no escapes at all, more than eight bytes\"", true},
	{"\"long string with a control character near its end\x1f\"", false},
	{`0`, true},
	{`-0`, true},
	{`-`, false},
	{`01`, false},
	{`-01`, false},
	{`1.`, false},
	{`1.5`, true},
	{`.5`, false},
	{`1e`, false},
	{`1e+`, false},
	{`1E-7`, true},
	{`1e07`, true},
	{`-12.34e+56`, true},
	{`+1`, false},
	{`0x1`, false},
	{`1 2`, false},
	{`NaN`, false},
	{`{}`, true},
	{`{ }`, true},
	{`[]`, true},
	{`[ ]`, true},
	{`[1,]`, false},
	{`[,1]`, false},
	{`[1 2]`, false},
	{`[1,2]`, true},
	{`{"a":1,}`, false},
	{`{"a" 1}`, false},
	{`{"a":}`, false},
	{`{a:1}`, false},
	{`{"a":1 "b":2}`, false},
	{`{"a":1,"b":[true,{"c":null}]}`, true},
	{`{"a":1]`, false},
	{`[1}`, false},
	{`[`, false},
	{`{`, false},
	{`{"a"`, false},
	{`{"a":`, false},
	{`]`, false},
	{`{}}`, false},
	{`{} {}`, false},
	{`[[[]]]`, true},
	{"\xef\xbb\xbf{}", false}, // a byte order mark
	{`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"a__echo","arguments":{"text":"hi"}}}`, true},
}

func TestValid(t *testing.T) {
	for _, c := range validCases {
		if got := json.Valid([]byte(c.in)); got != c.want {
			t.Fatalf("encoding/json.Valid(%q) = %v; the case is wrong", c.in, got)
		}
		if got := Valid([]byte(c.in)); got != c.want {
			t.Errorf("Valid(%q) = %v, want %v", c.in, got, c.want)
		}
	}
}

// TestValidDepth: nesting up to MaxDepth is valid, one more level is not,
// as for encoding/json; mixed arrays and objects keep their kinds across
// the words of the bit stack.
func TestValidDepth(t *testing.T) {
	nest := func(levels int) []byte {
		var b bytes.Buffer
		for i := range levels {
			if i%3 == 0 {
				b.WriteString(`{"k":`)
			} else {
				b.WriteByte('[')
			}
		}
		b.WriteString("1")
		for i := levels - 1; i >= 0; i-- {
			if i%3 == 0 {
				b.WriteByte('}')
			} else {
				b.WriteByte(']')
			}
		}
		return b.Bytes()
	}
	for _, levels := range []int{1, 63, 64, 65, 129, MaxDepth - 1, MaxDepth, MaxDepth + 1, 3 * MaxDepth} {
		in := nest(levels)
		want := json.Valid(in)
		if want != (levels <= MaxDepth) {
			t.Fatalf("encoding/json.Valid of %d levels = %v; MaxDepth is not its limit", levels, want)
		}
		if got := Valid(in); got != want {
			t.Errorf("Valid of %d levels = %v, want %v", levels, got, want)
		}
		// The same with the innermost closer of the wrong kind.
		bad := bytes.Clone(in)
		j := bytes.IndexAny(bad, "]}")
		bad[j] ^= ']' ^ '}'
		if Valid(bad) || json.Valid(bad) {
			t.Errorf("%d levels with a mismatched closer: Valid %v, encoding/json %v; want false", levels, Valid(bad), json.Valid(bad))
		}
	}
	// An unclosed hostile nesting far past the limit is refused without
	// growing anything.
	if Valid(bytes.Repeat([]byte("["), 1<<20)) {
		t.Error("a million open brackets are valid")
	}
	// A frame's nesting is checked without allocating.
	in := nest(64)
	if n := testing.AllocsPerRun(10, func() { Valid(in) }); n != 0 {
		t.Errorf("Valid of 64 levels allocates %v times", n)
	}
}

// TestValidMutations holds Valid to encoding/json.Valid on a few thousand
// single-byte changes of real frames, deterministically, so that CI checks
// more than the fuzz seeds.
func TestValidMutations(t *testing.T) {
	frames := []string{
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"a__echo","arguments":{"text":"h\u00e9 \"q\" \\ /"},"_meta":{"progressToken":-1.5e3}}}`,
		`{"jsonrpc":"2.0","id":"x","result":{"content":[{"type":"text","text":"a\nb"}],"isError":false,"structuredContent":{"n":[0,1.25,-3e-2,true,false,null,{}]}}}`,
		` [ {"a" : [ ] } , "" , 0 ] `,
	}
	alphabet := []byte("{}[]:,\"\\/ \t\n0123456789-+.eEtrufalsn\x00\x1f\x7f\xc3\xffux")
	rng := rand.New(rand.NewPCG(1, 2))
	checked := 0
	for _, f := range frames {
		for i := range len(f) {
			for _, c := range alphabet {
				for _, op := range []string{"replace", "insert", "delete"} {
					var in []byte
					switch op {
					case "replace":
						in = []byte(f[:i] + string(c) + f[i+1:])
					case "insert":
						in = []byte(f[:i] + string(c) + f[i:])
					case "delete":
						in = []byte(f[:i] + f[i+1:])
					}
					if got, want := Valid(in), json.Valid(in); got != want {
						t.Fatalf("Valid(%q) = %v, encoding/json says %v", in, got, want)
					}
					checked++
				}
			}
		}
		// Random truncations and splices.
		for range 500 {
			a, b := rng.IntN(len(f)+1), rng.IntN(len(f)+1)
			in := []byte(f[:min(a, b)] + f[max(a, b):])
			if got, want := Valid(in), json.Valid(in); got != want {
				t.Fatalf("Valid(%q) = %v, encoding/json says %v", in, got, want)
			}
			checked++
		}
	}
	if checked < 10000 {
		t.Fatalf("only %d inputs checked", checked)
	}
}

func FuzzValid(f *testing.F) {
	for _, c := range validCases {
		f.Add([]byte(c.in))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := Valid(b), json.Valid(b); got != want {
			t.Fatalf("Valid(%q) = %v, encoding/json says %v", b, got, want)
		}
	})
}

// BenchmarkValid compares Valid with encoding/json.Valid on a tools/call
// frame and on a large text result.
func BenchmarkValid(b *testing.B) {
	frame := []byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"a__echo","arguments":{"text":"hello"},"_meta":{"progressToken":12}}}`)
	text, _ := json.Marshal(strings.Repeat("line of a file that a tool read, with \"quotes\" and a tab\t\n", 2000))
	big := []byte(`{"jsonrpc":"2.0","id":8,"result":{"content":[{"type":"text","text":` + string(text) + `}]}}`)
	for _, in := range []struct {
		name string
		b    []byte
	}{{"frame", frame}, {"100KB-text", big}} {
		b.Run(in.name+"/jsonscan", func(b *testing.B) {
			b.SetBytes(int64(len(in.b)))
			for b.Loop() {
				if !Valid(in.b) {
					b.Fatal("not valid")
				}
			}
		})
		b.Run(in.name+"/encoding-json", func(b *testing.B) {
			b.SetBytes(int64(len(in.b)))
			for b.Loop() {
				if !json.Valid(in.b) {
					b.Fatal("not valid")
				}
			}
		})
	}
}

func TestContains(t *testing.T) {
	for _, c := range []struct{ b, sep string }{
		{``, `"a"`}, {`"a"`, `"a"`}, {`"a`, `"a"`}, {`x"a"`, `"a"`}, {`""a"`, `"a"`},
		{`{"isError":true}`, `"isError":true`}, {`{"isError":false}`, `"isError":true`},
		{`{"a":"\"isError\":true"}`, `"isError":true`}, {`"isError":tru`, `"isError":true`},
		{`abc`, `b`}, {`abc`, ``}, {``, ``}, {`"`, `"`}, {`ab"`, `"`},
	} {
		if got, want := Contains([]byte(c.b), []byte(c.sep)), bytes.Contains([]byte(c.b), []byte(c.sep)); got != want {
			t.Errorf("Contains(%q, %q) = %v, want %v", c.b, c.sep, got, want)
		}
	}
}

func FuzzContains(f *testing.F) {
	f.Add([]byte(`{"content":[{"type":"text","text":"a \"resultType\""}],"resultType":"complete"}`), []byte(`"resultType"`))
	f.Add([]byte(`""""`), []byte(`""`))
	f.Fuzz(func(t *testing.T, b, sep []byte) {
		if got, want := Contains(b, sep), bytes.Contains(b, sep); got != want {
			t.Fatalf("Contains(%q, %q) = %v, want %v", b, sep, got, want)
		}
		// And with sep made to start with a quote, as its callers' do.
		qsep := append([]byte{'"'}, sep...)
		if got, want := Contains(b, qsep), bytes.Contains(b, qsep); got != want {
			t.Fatalf("Contains(%q, %q) = %v, want %v", b, qsep, got, want)
		}
	})
}

// BenchmarkContains compares Contains with bytes.Contains looking for a
// member name that is not there, in a large text result and in a dense
// structured one.
func BenchmarkContains(b *testing.B) {
	text, _ := json.Marshal(strings.Repeat("x", 100<<10))
	large := []byte(`{"content":[{"type":"text","text":` + string(text) + `}]}`)
	dense := []byte(`{"structuredContent":[` + strings.Repeat(`{"id":12,"name":"a file","size":4096,"dir":false},`, 2000) + `{}]}`)
	sep := []byte(`"resultType"`)
	for _, in := range []struct {
		name string
		b    []byte
	}{{"100KB-text", large}, {"dense", dense}} {
		b.Run(in.name+"/jsonscan", func(b *testing.B) {
			b.SetBytes(int64(len(in.b)))
			for b.Loop() {
				if Contains(in.b, sep) {
					b.Fatal("found")
				}
			}
		})
		b.Run(in.name+"/bytes", func(b *testing.B) {
			b.SetBytes(int64(len(in.b)))
			for b.Loop() {
				if bytes.Contains(in.b, sep) {
					b.Fatal("found")
				}
			}
		})
	}
}
