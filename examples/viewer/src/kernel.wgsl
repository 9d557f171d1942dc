// The viewer's heatmap kernel: one workgroup of 256 invocations decodes the
// drawn window's raw elements (little-endian, packed in u32 words),
// dequantizes them (per tensor or per channel: scale * (q - zero_point)),
// reduces their min/max (non-finite values skipped) and maps each value to
// an RGBA colour of a five-stop scale (min -> stop 0, max -> stop 4).

struct Params {
    n: u32,         // elements in the window
    code: u32,      // element type (see decode.rs `kernel_code`)
    quant: u32,     // 0 none, 1 per tensor, 2 per channel
    base: u32,      // global index of the window's first element (per channel)
    inner: u32,     // elements per step along the channel axis
    channels: u32,  // shape[axis]
    scale: f32,     // per-tensor scale
    zero_point: i32,// per-tensor zero point
    cols: u32,      // window columns
    full_cols: u32, // the tensor's columns (global index of (r, c) = base + r * full_cols + c)
    _pad0: u32,
    _pad1: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> raw: array<u32>;
@group(0) @binding(2) var<storage, read> scales: array<f32>;
@group(0) @binding(3) var<storage, read> zero_points: array<i32>;
@group(0) @binding(4) var<storage, read_write> values: array<f32>;
@group(0) @binding(5) var<storage, read_write> min_max: array<f32>;
@group(0) @binding(6) var<storage, read_write> rgba: array<u32>;

var<workgroup> lo: array<f32, 256>;
var<workgroup> hi: array<f32, 256>;

fn byte_at(i: u32) -> u32 {
    return (raw[i >> 2u] >> ((i & 3u) * 8u)) & 0xffu;
}

fn half_at(i: u32) -> u32 {
    return (raw[i >> 1u] >> ((i & 1u) * 16u)) & 0xffffu;
}

fn decode(i: u32) -> f32 {
    switch p.code {
        case 1u: { return bitcast<f32>(raw[i]); }
        case 2u: { return unpack2x16float(half_at(i)).x; }
        case 3u: { return bitcast<f32>(half_at(i) << 16u); }
        case 4u: { return f32(bitcast<i32>(byte_at(i) << 24u) >> 24u); }
        case 5u: { return f32(byte_at(i)); }
        case 6u: { return f32(bitcast<i32>(half_at(i) << 16u) >> 16u); }
        case 7u: { return f32(half_at(i)); }
        case 8u: { return f32(bitcast<i32>(raw[i])); }
        case 9u: { return f32(raw[i]); }
        default: { return 0.0; }
    }
}

fn value(i: u32) -> f32 {
    let q = decode(i);
    if p.quant == 1u {
        return (q - f32(p.zero_point)) * p.scale;
    }
    if p.quant == 2u {
        let r = i / p.cols;
        let c = i % p.cols;
        let g = p.base + r * p.full_cols + c;
        let ch = (g / p.inner) % p.channels;
        return (q - f32(zero_points[ch])) * scales[ch];
    }
    return q;
}

fn finite(v: f32) -> bool {
    return (bitcast<u32>(v) & 0x7f800000u) != 0x7f800000u;
}

fn colour(t: f32) -> u32 {
    var stops = array<vec3<f32>, 5>(
        vec3<f32>(0.0, 0.0, 4.0),
        vec3<f32>(87.0, 16.0, 110.0),
        vec3<f32>(188.0, 55.0, 84.0),
        vec3<f32>(249.0, 142.0, 9.0),
        vec3<f32>(252.0, 255.0, 164.0),
    );
    let x = clamp(t, 0.0, 1.0) * 4.0;
    let k = min(u32(x), 3u);
    let f = x - f32(k);
    let c = round(mix(stops[k], stops[k + 1u], f));
    return u32(c.x) | (u32(c.y) << 8u) | (u32(c.z) << 16u) | (255u << 24u);
}

@compute @workgroup_size(256)
fn heatmap(@builtin(local_invocation_index) t: u32) {
    var l = bitcast<f32>(0x7f7fffffu); // the largest finite f32
    var h = -l;
    for (var i = t; i < p.n; i += 256u) {
        let v = value(i);
        values[i] = v;
        if finite(v) {
            l = min(l, v);
            h = max(h, v);
        }
    }
    lo[t] = l;
    hi[t] = h;
    workgroupBarrier();
    for (var s = 128u; s > 0u; s >>= 1u) {
        if t < s {
            lo[t] = min(lo[t], lo[t + s]);
            hi[t] = max(hi[t], hi[t + s]);
        }
        workgroupBarrier();
    }
    let mn = lo[0];
    let mx = hi[0];
    if t == 0u {
        min_max[0] = mn;
        min_max[1] = mx;
    }
    let span = mx - mn;
    for (var i = t; i < p.n; i += 256u) {
        let v = values[i];
        if finite(v) {
            var x = 0.0;
            if span > 0.0 {
                x = (v - mn) / span;
            }
            rgba[i] = colour(x);
        } else {
            rgba[i] = 0xffff00ffu; // non-finite: magenta
        }
    }
}
