// The viewer's heatmap kernel: one workgroup of 256 invocations decodes the
// drawn window's raw elements (any width from 1 to 32 bits, LSB first, rows
// at the bit positions the CPU planned: see quant.rs `window`), dequantizes
// them by the spec's formulas (per tensor, per channel, per block, NF4,
// MXFP), reduces their min/max (non-finite values skipped) and maps each
// value to an RGBA colour of a five-stop scale (min -> stop 0, max -> stop 4).

struct Params {
    n: u32,          // elements in the window
    code: u32,       // element type (see quant.rs `kernel_code`)
    formula: u32,    // 0 none, 1 scale * (q - z), 2 absmax * NF4[q], 3 2^(e - 127) * value(q)
    mapped: u32,     // 1: parameters per channel/block (buffers), 0: per tensor (below)
    base: u32,       // global index of the window's element (0, 0)
    inner: u32,      // product of the dimensions after the axis
    axis_len: u32,   // shape[axis]
    block: u32,      // elements per block; 0 per channel
    scale: f32,      // per-tensor scale
    zero_point: i32, // per-tensor zero point
    cols: u32,       // window columns
    full_cols: u32,  // the tensor's columns (global index of (r, c) = base + r * full_cols + c)
    bits: u32,       // bits per element
    p0: u32,         // the first parameter index the window uses
    scale_code: u32, // 1 f32, 2 f16, 3 bf16, 5 float8_e8m0
    has_zp: u32,     // 1 when zero points are given
    line: u32,       // axis_len * inner, at most 2^32 - 1 (g is below it then)
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> raw: array<u32>;
@group(0) @binding(2) var<storage, read> scales: array<u32>;
@group(0) @binding(3) var<storage, read> zero_points: array<i32>;
@group(0) @binding(4) var<storage, read> row_bits: array<u32>;
@group(0) @binding(5) var<storage, read_write> values: array<f32>;
@group(0) @binding(6) var<storage, read_write> min_max: array<f32>;
@group(0) @binding(7) var<storage, read_write> rgba: array<u32>;

var<workgroup> lo: array<f32, 256>;
var<workgroup> hi: array<f32, 256>;

// The NF4 levels, as the float32 bit patterns of the spec's table.
var<private> NF4: array<u32, 16> = array<u32, 16>(
    0xbf800000u, 0xbf3239b1u, 0xbf066b30u, 0xbeca32a0u, 0xbe91a24du, 0xbe3d353fu, 0xbdba7871u, 0x00000000u,
    0x3da2faffu, 0x3e24cae3u, 0x3e7c04ddu, 0x3ead033au, 0x3ee1a4b8u, 0x3f1007abu, 0x3f3913b3u, 0x3f800000u,
);

// A quiet NaN, made at run time (a constant NaN is a shader-creation
// error in WGSL).
fn nan() -> f32 {
    return bitcast<f32>(0x7fc00000u | min(p.n, 0u));
}

fn mask(n: u32) -> u32 {
    return select((1u << n) - 1u, 0xffffffffu, n >= 32u);
}

// `n` (1..=32) bits at bit `b` of the raw window, LSB first.
fn raw_bits(b: u32, n: u32) -> u32 {
    let w = b >> 5u;
    let s = b & 31u;
    var x = raw[w] >> s;
    if s + n > 32u {
        x |= raw[w + 1u] << (32u - s);
    }
    return x & mask(n);
}

fn scale_bits(b: u32, n: u32) -> u32 {
    let w = b >> 5u;
    let s = b & 31u;
    var x = scales[w] >> s;
    if s + n > 32u {
        x |= scales[w + 1u] << (32u - s);
    }
    return x & mask(n);
}

fn sext(x: u32, n: u32) -> f32 {
    return f32(bitcast<i32>(x << (32u - n)) >> (32u - n));
}

// A small float: `e` exponent bits, `m` mantissa bits, `bias`.
fn minifloat(x: u32, e: u32, m: u32, bias: i32) -> f32 {
    let exp = (x >> m) & ((1u << e) - 1u);
    let man = x & ((1u << m) - 1u);
    var v: f32;
    if exp == 0u {
        v = ldexp(f32(man), 1 - bias - i32(m));
    } else {
        v = ldexp(f32(man + (1u << m)), i32(exp) - bias - i32(m));
    }
    return select(v, -v, ((x >> (e + m)) & 1u) == 1u);
}

fn decode(code: u32, x: u32) -> f32 {
    switch code {
        case 1u: { return bitcast<f32>(x); }
        case 2u: { return unpack2x16float(x).x; }
        case 3u: { return bitcast<f32>(x << 16u); }
        case 4u: { return sext(x, 8u); }
        case 6u: { return sext(x, 16u); }
        case 8u: { return f32(bitcast<i32>(x)); }
        case 10u: { return sext(x, 4u); }
        case 12u: { return sext(x, 2u); }
        case 5u, 7u, 9u, 11u, 13u, 19u: { return f32(x); }
        case 14u: { // float8_e4m3 (OCP): no infinities, S.1111.111 is NaN
            if (x & 0x7fu) == 0x7fu { return nan(); }
            return minifloat(x, 4u, 3u, 7);
        }
        case 15u: { // float8_e5m2: IEEE-like
            if ((x >> 2u) & 0x1fu) == 0x1fu {
                if (x & 3u) != 0u { return nan(); }
                return bitcast<f32>(0x7f800000u | ((x & 0x80u) << 24u));
            }
            return minifloat(x, 5u, 2u, 15);
        }
        case 16u: { return minifloat(x, 2u, 1u, 1); } // float4_e2m1
        case 17u: { return minifloat(x, 2u, 3u, 1); } // float6_e2m3
        case 18u: { return minifloat(x, 3u, 2u, 3); } // float6_e3m2
        default: { return nan(); }
    }
}

// The parameter index of global element `g` (quant.rs `ParamMap::index`).
fn param_index(g: u32) -> u32 {
    let along = (g / p.inner) % p.axis_len;
    if p.block == 0u {
        return along;
    }
    let per_axis = (p.axis_len + p.block - 1u) / p.block;
    let outer = (g / p.line) * p.inner + g % p.inner;
    return outer * per_axis + along / p.block;
}

fn scale_at(j: u32) -> f32 {
    switch p.scale_code {
        case 1u: { return bitcast<f32>(scales[j]); }
        case 5u: {
            let e = scale_bits(j * 8u, 8u);
            if e == 0u || e == 255u { return nan(); } // reserved E8M0 codes
            return bitcast<f32>(e << 23u); // 2^(e - 127)
        }
        default: { return decode(p.scale_code, scale_bits(j * 16u, 16u)); }
    }
}

fn value(i: u32) -> f32 {
    let r = i / p.cols;
    let c = i % p.cols;
    let x = raw_bits(row_bits[r] + c * p.bits, p.bits);
    var s = p.scale;
    var z = p.zero_point;
    if p.mapped == 1u {
        let j = param_index(p.base + r * p.full_cols + c) - p.p0;
        s = scale_at(j);
        z = select(0, zero_points[j], p.has_zp == 1u);
    }
    switch p.formula {
        case 1u: { return (decode(p.code, x) - f32(z)) * s; }
        case 2u: { return s * bitcast<f32>(NF4[x & 15u]); }
        case 3u: { return s * decode(p.code, x); }
        default: { return decode(p.code, x); }
    }
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
