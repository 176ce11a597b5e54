//! Rewrites the pinned model's graph so that its weight products run on int8, as it is loaded.
//!
//! Why: the model ships every weight matrix as int8 behind a `Cast` to f32 and a `Mul` by one scale
//! per output column. ONNX Runtime folds those two into an f32 matrix when it loads the model, so
//! every product then ran in f32: a short query cost 1.2 ms plus 0.14 ms a token on two cores,
//! bound by the arithmetic (`docs/recall.md`, the eleventh look). Here each `MatMul(x, W)` whose
//! `W` is such an int8 matrix becomes what ONNX Runtime's dynamic quantisation writes:
//! `DynamicQuantizeLinear(x)` (one scale for the activations), `MatMulInteger(x8, W8)`, and the
//! two scales multiplied back in. ONNX Runtime fuses that into one int8 kernel. The weights are
//! the very int8 numbers the model ships; what is new is that the activations are rounded to
//! eight bits too. Measured (ONNX Runtime 1.24, this model): a 10-token query 2.5 → 0.9 ms on one
//! thread; on SciFact's 809 claims over its 5,183 abstracts the vectors keep a cosine of 0.989 or
//! more with the f32 products' (median 0.995) and dense nDCG@10 moves 0.6605 → 0.6584.
//!
//! Only what is certainly equal is rewritten: a scale per output column (or one for the whole
//! matrix), an int8 matrix stored in the graph, a product of rank-two weights. Anything else (a
//! scale per row, a product of two activations as in attention) is left as it was. The rewrite
//! reads and writes protobuf's wire format directly: four message types, a handful of fields, and
//! every field it does not touch copied byte for byte.

/// What [`quantize_products`] did.
#[derive(Debug)]
pub struct Rewritten {
    /// The model with its weight products on int8.
    pub model: Vec<u8>,
    /// How many `MatMul`s became int8 products.
    pub products: usize,
}

/// Rewrite every `MatMul` by an int8 weight matrix in the ONNX `model` into an int8 product.
/// Errors name what in the bytes is not a well-formed model; a model with no such product is
/// returned with `products == 0`.
pub fn quantize_products(model: &[u8]) -> Result<Rewritten, String> {
    let mut out = Vec::with_capacity(model.len());
    let mut products = 0;
    let mut graphs = 0;
    for field in fields(model).map_err(|e| format!("the model: {e}"))? {
        // ModelProto.graph = 7.
        if let (7, Value::Bytes(graph)) = (field.number, &field.value) {
            graphs += 1;
            let (graph, n) = rewrite_graph(graph).map_err(|e| format!("the model's graph: {e}"))?;
            products += n;
            put_bytes(&mut out, 7, &graph);
        } else {
            out.extend_from_slice(field.raw);
        }
    }
    if graphs != 1 {
        return Err(format!("the model has {graphs} graphs, expected one"));
    }
    Ok(Rewritten { model: out, products })
}

// ---- protobuf's wire format -------------------------------------------------------------------

enum Value<'a> {
    Varint(u64),
    Bytes(&'a [u8]),
    /// A fixed 32- or 64-bit value, never read here.
    Fixed,
}

struct Field<'a> {
    number: u64,
    value: Value<'a>,
    /// The whole field, tag included, to copy unchanged.
    raw: &'a [u8],
}

fn varint(buf: &[u8], pos: &mut usize) -> Result<u64, String> {
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = *buf.get(*pos).ok_or("a number runs past the end")?;
        *pos += 1;
        value |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Ok(value);
        }
    }
    Err("a number longer than ten bytes".to_string())
}

fn fields(buf: &[u8]) -> Result<Vec<Field<'_>>, String> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < buf.len() {
        let start = pos;
        let tag = varint(buf, &mut pos)?;
        let value = match tag & 7 {
            0 => Value::Varint(varint(buf, &mut pos)?),
            1 | 5 => {
                let width = if tag & 7 == 1 { 8 } else { 4 };
                pos =
                    pos.checked_add(width).filter(|&end| end <= buf.len()).ok_or("a fixed field runs past the end")?;
                Value::Fixed
            }
            2 => {
                let len = usize::try_from(varint(buf, &mut pos)?).map_err(|_| "a length too large")?;
                let end = pos.checked_add(len).filter(|&end| end <= buf.len()).ok_or("a field runs past the end")?;
                let bytes = &buf[pos..end];
                pos = end;
                Value::Bytes(bytes)
            }
            other => return Err(format!("wire type {other} (groups are not used by ONNX)")),
        };
        out.push(Field { number: tag >> 3, value, raw: &buf[start..pos] });
    }
    Ok(out)
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn put_bytes(out: &mut Vec<u8>, number: u64, bytes: &[u8]) {
    put_varint(out, number << 3 | 2);
    put_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

fn text(bytes: &[u8]) -> Result<&str, String> {
    std::str::from_utf8(bytes).map_err(|_| "a name that is not UTF-8".to_string())
}

// ---- the few ONNX messages the rewrite reads ----------------------------------------------------

/// A NodeProto's inputs (1), outputs (2), op_type (4) and domain (7).
struct Node<'a> {
    inputs: Vec<&'a str>,
    outputs: Vec<&'a str>,
    op: &'a str,
    domain: &'a str,
}

impl<'a> Node<'a> {
    fn parse(buf: &'a [u8]) -> Result<Node<'a>, String> {
        let mut node = Node { inputs: Vec::new(), outputs: Vec::new(), op: "", domain: "" };
        for f in fields(buf)? {
            if let Value::Bytes(b) = f.value {
                match f.number {
                    1 => node.inputs.push(text(b)?),
                    2 => node.outputs.push(text(b)?),
                    4 => node.op = text(b)?,
                    7 => node.domain = text(b)?,
                    _ => {}
                }
            }
        }
        Ok(node)
    }

    /// An operator of the default ONNX domain named `op`.
    fn is(&self, op: &str) -> bool {
        self.op == op && (self.domain.is_empty() || self.domain == "ai.onnx")
    }
}

/// A TensorProto's element type (2) and dimensions (1), for an initializer named (8).
struct Tensor {
    data_type: u64,
    dims: Vec<u64>,
}

const INT8: u64 = 3;
const FLOAT: u64 = 1;

fn parse_tensor(buf: &[u8]) -> Result<(String, Tensor), String> {
    let mut name = String::new();
    let mut tensor = Tensor { data_type: 0, dims: Vec::new() };
    for f in fields(buf)? {
        match (f.number, f.value) {
            (1, Value::Varint(d)) => tensor.dims.push(d),
            (1, Value::Bytes(packed)) => {
                let mut pos = 0;
                while pos < packed.len() {
                    tensor.dims.push(varint(packed, &mut pos)?);
                }
            }
            (2, Value::Varint(t)) => tensor.data_type = t,
            (8, Value::Bytes(b)) => name = text(b)?.to_string(),
            _ => {}
        }
    }
    Ok((name, tensor))
}

fn encode_node(inputs: &[&str], outputs: &[&str], op: &str, cast_to_float: bool) -> Vec<u8> {
    let mut node = Vec::new();
    for i in inputs {
        put_bytes(&mut node, 1, i.as_bytes());
    }
    for o in outputs {
        put_bytes(&mut node, 2, o.as_bytes());
    }
    put_bytes(&mut node, 4, op.as_bytes());
    if cast_to_float {
        // AttributeProto { name: "to", i: FLOAT, type: INT }.
        let mut attr = Vec::new();
        put_bytes(&mut attr, 1, b"to");
        put_varint(&mut attr, 3 << 3);
        put_varint(&mut attr, FLOAT);
        put_varint(&mut attr, 20 << 3);
        put_varint(&mut attr, 2);
        put_bytes(&mut node, 5, &attr);
    }
    node
}

/// One `MatMul(x, Mul(Cast(W8), scale))` to rewrite: the node indices (in the graph's fields) of
/// the product, the `Mul` and the `Cast`, and the names the int8 product needs.
struct Product<'a> {
    matmul: usize,
    mul: usize,
    cast: usize,
    x: &'a str,
    y: &'a str,
    weights: &'a str,
    scale: &'a str,
}

fn rewrite_graph(graph: &[u8]) -> Result<(Vec<u8>, usize), String> {
    let fields = fields(graph)?;
    let mut nodes: Vec<(usize, Node<'_>)> = Vec::new();
    let mut tensors = std::collections::HashMap::new();
    let mut outputs: Vec<&str> = Vec::new();
    for (i, f) in fields.iter().enumerate() {
        match (f.number, &f.value) {
            // GraphProto.node = 1, GraphProto.initializer = 5.
            (1, Value::Bytes(b)) => nodes.push((i, Node::parse(b)?)),
            (5, Value::Bytes(b)) => {
                let (name, t) = parse_tensor(b)?;
                tensors.insert(name, t);
            }
            // GraphProto.output = 12: a ValueInfoProto, its name = 1.
            (12, Value::Bytes(b)) => {
                for v in self::fields(b)? {
                    if let (1, Value::Bytes(name)) = (v.number, v.value) {
                        outputs.push(text(name)?);
                    }
                }
            }
            _ => {}
        }
    }
    let producer: std::collections::HashMap<&str, usize> =
        nodes.iter().enumerate().flat_map(|(k, (_, n))| n.outputs.iter().map(move |o| (*o, k))).collect();
    let mut uses: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    // What reads a name: nodes, and the graph's own outputs.
    for i in nodes.iter().flat_map(|(_, n)| n.inputs.iter()).chain(&outputs) {
        *uses.entry(i).or_default() += 1;
    }
    let mut products: Vec<Product<'_>> = Vec::new();
    for (k, (_, n)) in nodes.iter().enumerate() {
        if !n.is("MatMul") || n.inputs.len() != 2 || n.outputs.len() != 1 {
            continue;
        }
        let Some(&m) = producer.get(n.inputs[1]) else { continue };
        let mul = &nodes[m].1;
        if !mul.is("Mul") || mul.inputs.len() != 2 {
            continue;
        }
        let Some(&c) = producer.get(mul.inputs[0]) else { continue };
        let cast = &nodes[c].1;
        if !cast.is("Cast") || cast.inputs.len() != 1 {
            continue;
        }
        let (Some(w), Some(s)) = (tensors.get(cast.inputs[0]), tensors.get(mul.inputs[1])) else { continue };
        // An int8 matrix [K, N], and a scale that is one number or one per column (N): only then
        // can the scale be multiplied in after the integer product.
        let per_column = match s.dims.as_slice() {
            [] | [1] | [1, 1] => true,
            [n] | [1, n] => w.dims.len() == 2 && *n == w.dims[1],
            _ => false,
        };
        if w.data_type != INT8 || w.dims.len() != 2 || s.data_type != FLOAT || !per_column {
            continue;
        }
        // The `Mul` and `Cast` go with the product only when nothing else reads them.
        if uses.get(n.inputs[1]) != Some(&1) || uses.get(mul.inputs[0]) != Some(&1) {
            continue;
        }
        products.push(Product {
            matmul: nodes[k].0,
            mul: nodes[m].0,
            cast: nodes[c].0,
            x: n.inputs[0],
            y: n.outputs[0],
            weights: cast.inputs[0],
            scale: mul.inputs[1],
        });
    }
    let dropped: std::collections::HashSet<usize> = products.iter().flat_map(|p| [p.mul, p.cast]).collect();
    let at: std::collections::HashMap<usize, &Product<'_>> = products.iter().map(|p| (p.matmul, p)).collect();
    let mut out = Vec::with_capacity(graph.len());
    for (i, f) in fields.iter().enumerate() {
        if dropped.contains(&i) {
            continue;
        }
        let Some(p) = at.get(&i) else {
            out.extend_from_slice(f.raw);
            continue;
        };
        // Names no ONNX exporter writes, made unique by the product's own output name.
        let name = |part: &str| format!("{}::git-neo-int8::{part}", p.y);
        let (xq, xs, xz, yi, yf, ys) =
            (name("x"), name("x-scale"), name("x-zero"), name("i32"), name("f32"), name("xs"));
        let new_nodes = [
            encode_node(&[p.x], &[&xq, &xs, &xz], "DynamicQuantizeLinear", false),
            encode_node(&[&xq, p.weights, &xz], &[&yi], "MatMulInteger", false),
            encode_node(&[&yi], &[&yf], "Cast", true),
            encode_node(&[&yf, &xs], &[&ys], "Mul", false),
            encode_node(&[&ys, p.scale], &[p.y], "Mul", false),
        ];
        for node in new_nodes {
            put_bytes(&mut out, 1, &node);
        }
    }
    Ok((out, products.len()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tensor(name: &str, data_type: u64, dims: &[u64]) -> Vec<u8> {
        let mut t = Vec::new();
        for &d in dims {
            put_varint(&mut t, 1 << 3);
            put_varint(&mut t, d);
        }
        put_varint(&mut t, 2 << 3);
        put_varint(&mut t, data_type);
        put_bytes(&mut t, 8, name.as_bytes());
        t
    }

    /// A model with one weight product (`w8` [4, 3] behind a Cast and a Mul by `scale`), one
    /// product of two activations, and a field the rewrite does not know (kept as it is).
    fn model(scale_dims: &[u64], extra_reader: bool) -> Vec<u8> {
        let mut g = Vec::new();
        put_bytes(&mut g, 1, &encode_node(&["w8"], &["wf"], "Cast", true));
        put_bytes(&mut g, 1, &encode_node(&["wf", "scale"], &["w"], "Mul", false));
        put_bytes(&mut g, 1, &encode_node(&["x", "w"], &["y"], "MatMul", false));
        put_bytes(&mut g, 1, &encode_node(&["y", "x"], &["z"], "MatMul", false));
        if extra_reader {
            put_bytes(&mut g, 1, &encode_node(&["w"], &["w2"], "Identity", false));
        }
        put_bytes(&mut g, 2, b"graph name");
        put_bytes(&mut g, 5, &tensor("w8", INT8, &[4, 3]));
        put_bytes(&mut g, 5, &tensor("scale", FLOAT, scale_dims));
        let mut m = Vec::new();
        put_varint(&mut m, 1 << 3);
        put_varint(&mut m, 10); // ir_version
        put_bytes(&mut m, 7, &g);
        m
    }

    fn ops(model: &[u8]) -> Vec<String> {
        let graph = fields(model)
            .expect("a model")
            .into_iter()
            .find_map(|f| match (f.number, f.value) {
                (7, Value::Bytes(b)) => Some(b.to_vec()),
                _ => None,
            })
            .expect("a graph");
        fields(&graph)
            .expect("a graph")
            .into_iter()
            .filter_map(|f| match (f.number, f.value) {
                (1, Value::Bytes(b)) => Some(Node::parse(b).expect("a node").op.to_string()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn a_weight_product_with_a_scale_per_column_runs_on_int8_and_the_rest_is_kept() {
        let before = model(&[1, 3], false);
        let after = quantize_products(&before).expect("rewrites");
        assert_eq!(after.products, 1);
        assert_eq!(
            ops(&after.model),
            ["DynamicQuantizeLinear", "MatMulInteger", "Cast", "Mul", "Mul", "MatMul"],
            "the weights' Cast and Mul go, the product of two activations stays"
        );
        // The int8 product reads the shipped int8 weights, and the last Mul writes the old output.
        let raw = String::from_utf8_lossy(&after.model);
        assert!(raw.contains("w8") && raw.contains("graph name"), "unknown fields and the weights are kept");
        // Rewriting again changes nothing more.
        assert_eq!(quantize_products(&after.model).expect("rewrites").products, 0);
        // A scale of one number is as good as one per column.
        assert_eq!(quantize_products(&model(&[], false)).expect("rewrites").products, 1);
    }

    #[test]
    fn what_is_not_certainly_equal_is_left_as_it_was() {
        // A scale per row cannot be multiplied in after the product.
        let per_row = model(&[4, 1], false);
        let same = quantize_products(&per_row).expect("reads");
        assert_eq!((same.products, same.model), (0, per_row));
        // The f32 weights read by something else too.
        assert_eq!(quantize_products(&model(&[1, 3], true)).expect("reads").products, 0);
        // Or the graph's output.
        let mut m = model(&[1, 3], false);
        let mut graph = Vec::new();
        for f in fields(&m).expect("a model") {
            if let (7, Value::Bytes(g)) = (f.number, f.value) {
                graph = g.to_vec();
            }
        }
        let mut output = Vec::new();
        put_bytes(&mut output, 1, b"w");
        put_bytes(&mut graph, 12, &output);
        m.clear();
        put_bytes(&mut m, 7, &graph);
        assert_eq!(quantize_products(&m).expect("reads").products, 0);
    }

    #[test]
    fn bytes_that_are_not_a_model_are_an_error_not_a_panic() {
        let good = model(&[1, 3], false);
        for cut in [1, 3, good.len() / 2, good.len() - 1] {
            assert!(quantize_products(&good[..cut]).is_err(), "cut at {cut}");
        }
        assert!(quantize_products(b"").is_err(), "no graph");
        assert!(quantize_products(&[0x0b]).is_err(), "a group");
        assert!(quantize_products(&[0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]).is_err());
    }
}
