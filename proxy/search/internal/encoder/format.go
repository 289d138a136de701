package encoder

// The layout of model.bin, which internal/genuse writes from the npm package
// and Decode reads (all numbers little-endian):
//
//	magic    "MFUSE1\n"
//	pieces   uint32 count, then per piece: uint16 byte length, the UTF-8
//	         bytes, float32 score (the SentencePiece vocabulary, in id order)
//	tensors  in the order of Tensors, each: uint8 kind, uint32 rows,
//	         uint32 cols, then
//	           kind 0 (float32): rows×cols float32, row-major;
//	           kind 1 (int8 rows): rows float32 scales, then rows×cols int8,
//	           row-major; element (i, j) is scale[i]·int8[i·cols+j].
//	         A kernel (TensorSpec.Kernel) is stored transposed: a row per
//	         output.
const magic = "MFUSE1\n"

// Tensor kinds of model.bin.
const (
	KindFloat32 = 0
	KindInt8    = 1
)

// A TensorSpec names one weight of the TF.js graph model as model.bin holds
// it: its graph name, its shape as a matrix in the graph (Rows×Cols, inputs
// by outputs for a kernel), and how genuse stores it.
type TensorSpec struct {
	Graph      string // the weight's name in the TF.js model.json manifest
	Rows, Cols int
	// Kernel: a matrix the encoder multiplies by, stored transposed (a row
	// per output, so that each output is one dot product) as int8 with a
	// scale per output. Else float32 as in the graph, except the embedding
	// table (Rows > 1 and not Kernel), which is int8 per row (per piece).
	Kernel bool
}

// Quantised reports whether genuse stores t as int8.
func (t TensorSpec) Quantised() bool { return t.Kernel || t.Rows > 1 }

// Stored returns t's shape in model.bin.
func (t TensorSpec) Stored() (rows, cols int) {
	if t.Kernel {
		return t.Cols, t.Rows
	}
	return t.Rows, t.Cols
}

const (
	tfA = "module_apply_default/Encoder_en/KonaTransformer/Encode/"
	tfK = "module/Encoder_en/KonaTransformer/Encode/"
)

// The tensors of model.bin, in file order; the index is the field order of
// weights (see Decode).
var Tensors = []TensorSpec{
	{"module/Embeddings_en", 8002, 256, false},
	{tfA + "TransformerStack/Layer_0/AddTimingSignal/TimingSignal/ExpandDims_1", 1, 128, false},
	// Layer 0 (256 in, 512 out).
	{tfA + "Layer_0/TransformerLayer/layer_prepostprocess/layer_norm/layer_norm_scale/ConcatPartitions/concat", 1, 256, false},
	{tfA + "Layer_0/TransformerLayer/layer_prepostprocess/layer_norm/layer_norm_bias/ConcatPartitions/concat", 1, 256, false},
	{tfA + "Layer_0/TransformerLayer/dense/kernel/ConcatPartitions/concat", 256, 512, true},
	{tfA + "Layer_0/TransformerLayer/dense/bias/ConcatPartitions/concat", 1, 512, false},
	{tfK + "Layer_0/TransformerLayer/MultiheadAttention/qkv_transform_single/kernel/part_0", 256, 768, true},
	{tfA + "Layer_0/TransformerLayer/MultiheadAttention/qkv_transform_single/bias/ConcatPartitions/concat", 1, 768, false},
	{tfK + "Layer_0/TransformerLayer/MultiheadAttention/output_transform_single/kernel/part_0", 256, 512, true},
	{tfA + "Layer_0/TransformerLayer/MultiheadAttention/output_transform_single/bias/ConcatPartitions/concat", 1, 512, false},
	{tfA + "Layer_0/TransformerLayer/FFN/layer_prepostprocess/layer_norm/layer_norm_scale/ConcatPartitions/concat", 1, 512, false},
	{tfA + "Layer_0/TransformerLayer/FFN/layer_prepostprocess/layer_norm/layer_norm_bias/ConcatPartitions/concat", 1, 512, false},
	{tfA + "TransformerStack/Layer_0/TransformerLayer/FFN/conv1/Tensordot/Reshape_1", 512, 1536, true},
	{tfA + "Layer_0/TransformerLayer/FFN/conv1/bias/ConcatPartitions/concat", 1, 1536, false},
	{tfA + "TransformerStack/Layer_0/TransformerLayer/FFN/conv2/Tensordot/Reshape_1", 1536, 512, true},
	{tfA + "Layer_0/TransformerLayer/FFN/conv2/bias/ConcatPartitions/concat", 1, 512, false},
	// Layer 1 (512 in, 512 out).
	{tfA + "Layer_1/TransformerLayer/layer_prepostprocess/layer_norm/layer_norm_scale/ConcatPartitions/concat", 1, 512, false},
	{tfA + "Layer_1/TransformerLayer/layer_prepostprocess/layer_norm/layer_norm_bias/ConcatPartitions/concat", 1, 512, false},
	{tfK + "Layer_1/TransformerLayer/MultiheadAttention/qkv_transform_single/kernel/part_0", 512, 1536, true},
	{tfA + "Layer_1/TransformerLayer/MultiheadAttention/qkv_transform_single/bias/ConcatPartitions/concat", 1, 1536, false},
	{tfK + "Layer_1/TransformerLayer/MultiheadAttention/output_transform_single/kernel/part_0", 512, 512, true},
	{tfA + "Layer_1/TransformerLayer/MultiheadAttention/output_transform_single/bias/ConcatPartitions/concat", 1, 512, false},
	{tfA + "Layer_1/TransformerLayer/FFN/layer_prepostprocess/layer_norm/layer_norm_scale/ConcatPartitions/concat", 1, 512, false},
	{tfA + "Layer_1/TransformerLayer/FFN/layer_prepostprocess/layer_norm/layer_norm_bias/ConcatPartitions/concat", 1, 512, false},
	{tfA + "TransformerStack/Layer_1/TransformerLayer/FFN/conv1/Tensordot/Reshape_1", 512, 1536, true},
	{tfA + "Layer_1/TransformerLayer/FFN/conv1/bias/ConcatPartitions/concat", 1, 1536, false},
	{tfA + "TransformerStack/Layer_1/TransformerLayer/FFN/conv2/Tensordot/Reshape_1", 1536, 512, true},
	{tfA + "Layer_1/TransformerLayer/FFN/conv2/bias/ConcatPartitions/concat", 1, 512, false},
	// Pooling is a plain mean; then one tanh layer and L2 normalisation.
	{"module/Encoder_en/hidden_layers/tanh_layer_0/weights", 512, 512, true},
	{"module/Encoder_en/hidden_layers/tanh_layer_0/bias", 1, 512, false},
}
