//! The wasm-bindgen surface the page calls (browser only).

use std::cell::RefCell;
use std::rc::Rc;

use hurray_core::TensorView;
use hurray_gpu::wgpu::BufferUsages;
use hurray_gpu::{GpuBufferHandle, GpuContext, GpuKernel, GpuResource};
use wasm_bindgen::prelude::*;

use crate::decode::{self, Stream};
use crate::quant::{self, DrawPlan};

/// Offsets cross the JS boundary as `f64` (exact up to 2^53).
#[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
fn u(v: f64) -> u64 {
    if v.is_finite() && v >= 0.0 {
        v as u64
    } else {
        0
    }
}

/// See [`decode::file_plan`].
#[wasm_bindgen]
pub fn file_plan(head: &[u8], tail: &[u8], file_len: f64) -> String {
    decode::file_plan(head, tail, u(file_len))
}

/// See [`decode::file_index`].
#[wasm_bindgen]
pub fn file_index(
    index: &[u8],
    index_offset: f64,
    kv: &[u8],
    kv_offset: f64,
    crc: u32,
    check_crc: bool,
) -> String {
    decode::file_index(index, u(index_offset), kv, u(kv_offset), crc, check_crc)
}

/// See [`decode::verify_file`].
#[wasm_bindgen]
pub fn verify_file(bytes: &[u8]) -> String {
    decode::verify_file(bytes)
}

/// See [`decode::describe`].
#[wasm_bindgen]
pub fn describe(bytes: &[u8], base: f64, alignment: f64) -> String {
    decode::describe(bytes, u(base), u(alignment))
}

/// A stream fed chunk by chunk (see [`decode::Stream`]).
#[wasm_bindgen]
pub struct StreamSession(Stream);

#[wasm_bindgen]
impl StreamSession {
    /// A fresh decoder.
    #[wasm_bindgen(constructor)]
    #[must_use]
    pub fn new() -> Self {
        Self(Stream::new())
    }
    /// Feeds a chunk; `false` once the stream failed.
    pub fn feed(&mut self, chunk: &[u8]) -> bool {
        self.0.feed(chunk)
    }
    /// The end of the input.
    pub fn finish(&mut self) {
        self.0.finish();
    }
    /// Bytes taken in.
    #[allow(clippy::cast_precision_loss)]
    pub fn position(&self) -> f64 {
        self.0.position() as f64
    }
    /// Tensors and error so far.
    pub fn json(&self) -> String {
        decode::stream_json(&self.0)
    }
    /// The kept data of tensor `i` (empty when not kept).
    pub fn data(&self, i: usize) -> Vec<u8> {
        self.0
            .tensors
            .get(i)
            .and_then(|t| t.data.clone())
            .unwrap_or_default()
    }
    /// The descriptor of tensor `i`.
    pub fn descriptor(&self, i: usize) -> Vec<u8> {
        self.0
            .tensors
            .get(i)
            .map(|t| t.descriptor.clone())
            .unwrap_or_default()
    }
}

impl Default for StreamSession {
    fn default() -> Self {
        Self::new()
    }
}

thread_local! {
    static GPU: RefCell<Option<(GpuContext, Rc<GpuKernel>)>> = const { RefCell::new(None) };
}

/// Opens the browser's WebGPU adapter and compiles the kernel; answers the
/// adapter's name, or rejects with why there is none.
///
/// # Errors
/// No adapter, no device, or the kernel does not compile.
#[wasm_bindgen]
pub async fn gpu_init() -> Result<String, JsValue> {
    let ctx = GpuContext::new_async()
        .await
        .map_err(|e| JsValue::from_str(&e.to_string()))?;
    // WebGPU reports shader errors asynchronously: ask for them, so a kernel
    // the browser refuses is an error here rather than a blank heatmap.
    let module = ctx
        .device
        .create_shader_module(hurray_gpu::wgpu::ShaderModuleDescriptor {
            label: Some("heatmap"),
            source: hurray_gpu::wgpu::ShaderSource::Wgsl(include_str!("kernel.wgsl").into()),
        });
    let info = module.get_compilation_info().await;
    let errors: Vec<String> = info
        .messages
        .iter()
        .map(|m| format!("{:?}: {}", m.message_type, m.message))
        .collect();
    if !errors.is_empty() {
        return Err(JsValue::from_str(&format!(
            "kernel.wgsl: {}",
            errors.join("; ")
        )));
    }
    let kernel = GpuKernel::new(&ctx.device, include_str!("kernel.wgsl"), "heatmap")
        .map_err(|e| JsValue::from_str(&e.to_string()))?;
    let info = ctx.adapter_info();
    GPU.with(|g| *g.borrow_mut() = Some((ctx, Rc::new(kernel))));
    Ok(format!("{} ({:?})", info.name, info.backend))
}

/// A drawn window: the GPU's colours and min/max, and the CPU's min/max.
#[wasm_bindgen]
pub struct Heat {
    width: u32,
    height: u32,
    min: f32,
    max: f32,
    cpu_min: f32,
    cpu_max: f32,
    rgba: Vec<u8>,
}

#[wasm_bindgen]
impl Heat {
    /// Columns.
    #[wasm_bindgen(getter)]
    pub fn width(&self) -> u32 {
        self.width
    }
    /// Rows.
    #[wasm_bindgen(getter)]
    pub fn height(&self) -> u32 {
        self.height
    }
    /// The GPU's minimum (NaN when no value is finite).
    #[wasm_bindgen(getter)]
    pub fn min(&self) -> f32 {
        self.min
    }
    /// The GPU's maximum.
    #[wasm_bindgen(getter)]
    pub fn max(&self) -> f32 {
        self.max
    }
    /// The CPU's minimum.
    #[wasm_bindgen(getter)]
    pub fn cpu_min(&self) -> f32 {
        self.cpu_min
    }
    /// The CPU's maximum.
    #[wasm_bindgen(getter)]
    pub fn cpu_max(&self) -> f32 {
        self.cpu_max
    }
    /// RGBA bytes, row by row.
    pub fn rgba(&self) -> Vec<u8> {
        self.rgba.clone()
    }
}

fn err(e: impl std::fmt::Display) -> JsValue {
    JsValue::from_str(&e.to_string())
}

/// The bytes a window reads (see [`quant::window`]): `{"reads",
/// "scales", "zero_points"}` or `{"error": {"text"}}`.
#[wasm_bindgen]
pub fn window(desc: &[u8], slice: f64, rows: f64, cols: f64) -> String {
    let plan = TensorView::parse(desc)
        .map_err(|e| e.to_string())
        .and_then(|v| quant::draw_plan(&v));
    match plan.and_then(|p| Ok((quant::window(&p, u(slice), u(rows), u(cols))?, p))) {
        Ok((w, p)) => w.json(&p.quant),
        Err(e) => crate::json::error("Window", 0, &e),
    }
}

/// Draws a window of `rows × cols` elements of slice `slice` of the tensor
/// described by `desc`: `data` holds the bytes of [`window`]'s reads back
/// to back, `scales`/`zero_points` those of its parameter reads (empty when
/// there are none).
///
/// # Errors
/// The descriptor does not parse or cannot be drawn, the data is short,
/// no GPU was opened, or a GPU call failed.
#[wasm_bindgen]
#[allow(clippy::cast_possible_truncation)]
pub async fn draw(
    desc: Vec<u8>,
    data: Vec<u8>,
    scales: Vec<u8>,
    zero_points: Vec<u8>,
    slice: f64,
    rows: u32,
    cols: u32,
) -> Result<Heat, JsValue> {
    let view = TensorView::parse(&desc).map_err(err)?;
    let plan: DrawPlan = quant::draw_plan(&view).map_err(err)?;
    let w = quant::window(&plan, u(slice), u64::from(rows), u64::from(cols)).map_err(err)?;
    let n = u64::from(rows) * u64::from(cols);
    let want: u64 = w.reads.iter().map(|r| r.1).sum();
    if (data.len() as u64) < want {
        return Err(err("the data read is shorter than the window"));
    }
    let cpu = quant::cpu_min_max(&plan, &w, &data, &scales, &zero_points);
    let (ctx, kernel) = GPU
        .with(|g| g.borrow().clone())
        .ok_or_else(|| err("no WebGPU adapter"))?;
    let q = &plan.quant;
    let m = q.map.unwrap_or(quant::ParamMap {
        axis_len: 1,
        inner: 1,
        block: 0,
        stored_len: 1,
        count: 1,
        scale_buffer: 0,
        zero_point_buffer: None,
        scale_code: 1,
        scale_width: 4,
    });
    if let Some((p0, p1)) = w.params {
        let count = p1 - p0 + 1;
        let short = (scales.len() as u64) < count * m.scale_width
            || (m.zero_point_buffer.is_some() && (zero_points.len() as u64) < count * 4);
        if short {
            return Err(err("the parameter buffers read are short"));
        }
    }
    // `window` refused anything past element 2^32 for the mapped schemes.
    let c32 = |x: u64| x.min(u64::from(u32::MAX)) as u32;
    let params: [u32; 20] = [
        n as u32,
        plan.code,
        q.formula as u32,
        u32::from(q.map.is_some()),
        c32(w.base),
        c32(m.inner.max(1)),
        c32(m.axis_len.max(1)),
        c32(m.block),
        q.scale.to_bits(),
        q.zero_point.cast_unsigned(),
        cols,
        c32(plan.cols),
        plan.bits as u32,
        c32(w.params.map_or(0, |p| p.0)),
        m.scale_code,
        u32::from(m.zero_point_buffer.is_some()),
        c32(m.axis_len.max(1).saturating_mul(m.inner.max(1))),
        0,
        0,
        0,
    ];
    // Every buffer padded to whole words, plus one (a read may straddle
    // the last word); empty ones get that word.
    let pad = |mut v: Vec<u8>| {
        v.resize((v.len().div_ceil(4) + 1) * 4, 0);
        v
    };
    let raw = pad(data);
    let scales = pad(scales);
    let zero_points = pad(zero_points);
    let row_bits: Vec<u8> = w.row_bits.iter().flat_map(|b| b.to_le_bytes()).collect();
    let (d, q) = (&ctx.device, &ctx.queue);
    let st = BufferUsages::STORAGE;
    let raw = GpuBufferHandle::upload_slice_async(d, q, &raw, st)
        .await
        .map_err(err)?;
    let sbuf = GpuBufferHandle::upload_slice_async(d, q, &scales, st)
        .await
        .map_err(err)?;
    let zbuf = GpuBufferHandle::upload_slice_async(d, q, &zero_points, st)
        .await
        .map_err(err)?;
    let rbuf = GpuBufferHandle::upload_slice_async(d, q, &row_bits, st)
        .await
        .map_err(err)?;
    let values = GpuBufferHandle::alloc(d, n * 4, st).map_err(err)?;
    let mm = GpuBufferHandle::alloc(d, 8, st | BufferUsages::COPY_SRC).map_err(err)?;
    let out = GpuBufferHandle::alloc(d, n * 4, st | BufferUsages::COPY_SRC).map_err(err)?;
    kernel
        .dispatch(
            q,
            &[
                GpuResource::uniform(&params),
                GpuResource::Buffer(raw),
                GpuResource::Buffer(sbuf),
                GpuResource::Buffer(zbuf),
                GpuResource::Buffer(rbuf),
                GpuResource::Buffer(values),
                GpuResource::Buffer(mm.clone()),
                GpuResource::Buffer(out.clone()),
            ],
            [1, 1, 1],
        )
        .map_err(err)?;
    let min_max = mm.readback_vec_async::<u8>(d, q).await.map_err(err)?;
    let rgba = out.readback_vec_async::<u8>(d, q).await.map_err(err)?;
    let f = |i: usize| {
        min_max
            .get(i * 4..i * 4 + 4)
            .map_or(f32::NAN, |b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    };
    let (gmin, gmax) = (f(0), f(1));
    let (gmin, gmax) = if gmin <= gmax {
        (gmin, gmax)
    } else {
        (f32::NAN, f32::NAN)
    };
    let (cmin, cmax) = cpu.unwrap_or((f32::NAN, f32::NAN));
    Ok(Heat {
        width: cols,
        height: rows,
        min: gmin,
        max: gmax,
        cpu_min: cmin,
        cpu_max: cmax,
        rgba,
    })
}
