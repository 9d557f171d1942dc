//! Plain SVG charts for the benchmarks (hand-written text, no crate): the
//! benches draw what they measured, because a curve is read faster than a
//! table. Shared by `transfer_bench` and `load_bench` (`#[path]` module).

#![allow(dead_code)]

use std::fmt::Write as _;

/// One line (or one bar per group) of a chart.
pub(crate) struct Series {
    /// The legend's text.
    pub(crate) name: String,
    /// Stroke / fill colour (any SVG colour).
    pub(crate) color: &'static str,
    /// Dashed line (baselines).
    pub(crate) dashed: bool,
    /// `(x, y)` points: x in bytes (log scale), y in GB/s.
    pub(crate) points: Vec<(f64, f64)>,
}

/// Colours: ours in strong tones, baselines in grey / orange.
pub(crate) const OURS: &str = "#1f5fbf";
pub(crate) const OURS_2: &str = "#2ca02c";
pub(crate) const PINNED: &str = "#d62728";
pub(crate) const PAGEABLE: &str = "#ff7f0e";
pub(crate) const OTHER: &str = "#7f7f7f";

const W: f64 = 560.0;
const H: f64 = 340.0;
const LEFT: f64 = 56.0;
const RIGHT: f64 = 32.0;
const TOP: f64 = 36.0;
const BOTTOM: f64 = 96.0;

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// A byte count as a short label: 4 B, 4 KiB, 1 MiB, 4 GiB.
pub(crate) fn size_label(bytes: f64) -> String {
    let units = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = bytes;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < units.len() {
        v /= 1024.0;
        u += 1;
    }
    if (v - v.round()).abs() < 0.05 {
        format!("{} {}", v.round(), units[u])
    } else {
        format!("{v:.1} {}", units[u])
    }
}

/// A "nice" axis maximum at or above `v` (1, 1.2, 1.5, 2, 2.5, 3, 4, 5,
/// 6, 8 × 10ⁿ).
fn nice_max(v: f64) -> f64 {
    let v = v.max(1e-3);
    let p = 10f64.powf(v.log10().floor());
    for m in [1.0, 1.2, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0] {
        if m * p >= v {
            return m * p;
        }
    }
    10.0 * p
}

/// One panel: GB/s against size (log x), at `(ox, oy)` in the document.
fn panel(out: &mut String, ox: f64, oy: f64, title: &str, series: &[Series]) {
    let pw = W - LEFT - RIGHT;
    let ph = H - TOP - BOTTOM;
    let xs: Vec<f64> = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .filter(|x| *x > 0.0)
        .collect();
    let (xmin, xmax) = xs
        .iter()
        .fold((f64::MAX, f64::MIN), |(a, b), x| (a.min(*x), b.max(*x)));
    let (lx0, lx1) = if xs.is_empty() {
        (0.0, 1.0)
    } else if xmax > xmin {
        (xmin.log2(), xmax.log2())
    } else {
        (xmin.log2() - 1.0, xmin.log2() + 1.0)
    };
    let ymax = nice_max(
        series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.1))
            .fold(0.0, f64::max),
    );
    let x = |v: f64| ox + LEFT + (v.log2() - lx0) / (lx1 - lx0) * pw;
    let y = |v: f64| oy + TOP + ph - v / ymax * ph;
    let _ = writeln!(
        out,
        r#"<text x="{:.1}" y="{:.1}" font-size="14" font-weight="bold" text-anchor="middle">{}</text>"#,
        ox + LEFT + pw / 2.0,
        oy + 20.0,
        esc(title)
    );
    // Grid and y axis.
    for i in 0..=5 {
        let v = ymax * f64::from(i) / 5.0;
        let _ = writeln!(
            out,
            r##"<line x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="#ddd"/><text x="{:.1}" y="{:.1}" font-size="11" text-anchor="end">{}</text>"##,
            ox + LEFT,
            y(v),
            ox + LEFT + pw,
            y(v),
            ox + LEFT - 6.0,
            y(v) + 4.0,
            if ymax >= 10.0 {
                format!("{v:.0}")
            } else {
                format!("{v:.1}")
            }
        );
    }
    let _ = writeln!(
        out,
        r#"<text x="{:.1}" y="{:.1}" font-size="12" text-anchor="middle" transform="rotate(-90 {:.1} {:.1})">GB/s</text>"#,
        ox + 14.0,
        oy + TOP + ph / 2.0,
        ox + 14.0,
        oy + TOP + ph / 2.0
    );
    // X ticks at the measured sizes.
    let mut ticks: Vec<f64> = xs.clone();
    ticks.sort_by(f64::total_cmp);
    ticks.dedup();
    for t in &ticks {
        let _ = writeln!(
            out,
            r##"<line x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="#eee"/><text x="{:.1}" y="{:.1}" font-size="11" text-anchor="middle">{}</text>"##,
            x(*t),
            oy + TOP,
            x(*t),
            oy + TOP + ph,
            x(*t),
            oy + TOP + ph + 16.0,
            size_label(*t)
        );
    }
    let _ = writeln!(
        out,
        r#"<rect x="{:.1}" y="{:.1}" width="{pw:.1}" height="{ph:.1}" fill="none" stroke="black"/>"#,
        ox + LEFT,
        oy + TOP
    );
    for s in series {
        let pts: Vec<String> = s
            .points
            .iter()
            .filter(|p| p.0 > 0.0)
            .map(|p| format!("{:.1},{:.1}", x(p.0), y(p.1)))
            .collect();
        let dash = if s.dashed {
            r#" stroke-dasharray="5,4""#
        } else {
            ""
        };
        let _ = writeln!(
            out,
            r#"<polyline points="{}" fill="none" stroke="{}" stroke-width="2"{dash}/>"#,
            pts.join(" "),
            s.color
        );
        for p in s.points.iter().filter(|p| p.0 > 0.0) {
            let _ = writeln!(
                out,
                r#"<circle cx="{:.1}" cy="{:.1}" r="3" fill="{}"/>"#,
                x(p.0),
                y(p.1),
                s.color
            );
        }
    }
    legend(out, ox + LEFT, oy + TOP + ph + 30.0, series);
}

/// The legend: two columns under a panel.
fn legend(out: &mut String, x0: f64, y0: f64, series: &[Series]) {
    for (i, s) in series.iter().enumerate() {
        let (col, row) = (i % 2, i / 2);
        let (lx, ly) = (x0 + col as f64 * 250.0, y0 + row as f64 * 16.0);
        let dash = if s.dashed {
            r#" stroke-dasharray="5,4""#
        } else {
            ""
        };
        let _ = writeln!(
            out,
            r#"<line x1="{lx:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="{}" stroke-width="3"{dash}/><text x="{:.1}" y="{:.1}" font-size="11">{}</text>"#,
            ly - 4.0,
            lx + 22.0,
            ly - 4.0,
            s.color,
            lx + 28.0,
            ly,
            esc(&s.name)
        );
    }
}

/// A document of panels side by side, with a caption line at the bottom.
pub(crate) fn line_charts(panels: &[(&str, Vec<Series>)], caption: &str) -> String {
    let width = W * panels.len().max(1) as f64;
    let height = H + 24.0;
    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0}" height="{height:.0}" viewBox="0 0 {width:.0} {height:.0}" font-family="sans-serif">"#
    );
    let _ = writeln!(out, r#"<rect width="100%" height="100%" fill="white"/>"#);
    for (i, (title, series)) in panels.iter().enumerate() {
        panel(&mut out, W * i as f64, 0.0, title, series);
    }
    let _ = writeln!(
        out,
        r##"<text x="8" y="{:.1}" font-size="10" fill="#555">{}</text>"##,
        height - 8.0,
        esc(caption)
    );
    out.push_str("</svg>\n");
    out
}

/// Grouped bars: one group per label, one bar per series (`values[g]` is
/// the series' value for group `g`; `None` leaves a gap). Values printed
/// above the bars.
pub(crate) fn bar_chart(
    title: &str,
    groups: &[String],
    series: &[(String, &'static str, Vec<Option<f64>>)],
    caption: &str,
) -> String {
    let width = W.max(180.0 * groups.len() as f64 + LEFT + RIGHT);
    let pw = width - LEFT - RIGHT;
    let ph = H - TOP - BOTTOM;
    let height = H + 24.0 + 16.0 * (series.len() as f64 / 2.0).ceil();
    let ymax = nice_max(
        series
            .iter()
            .flat_map(|s| s.2.iter().flatten().copied())
            .fold(0.0, f64::max),
    );
    let y = |v: f64| TOP + ph - v / ymax * ph;
    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0}" height="{height:.0}" viewBox="0 0 {width:.0} {height:.0}" font-family="sans-serif">"#
    );
    let _ = writeln!(out, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        out,
        r#"<text x="{:.1}" y="20" font-size="14" font-weight="bold" text-anchor="middle">{}</text>"#,
        LEFT + pw / 2.0,
        esc(title)
    );
    for i in 0..=5 {
        let v = ymax * f64::from(i) / 5.0;
        let _ = writeln!(
            out,
            r##"<line x1="{LEFT:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="#ddd"/><text x="{:.1}" y="{:.1}" font-size="11" text-anchor="end">{v:.0}</text>"##,
            y(v),
            LEFT + pw,
            y(v),
            LEFT - 6.0,
            y(v) + 4.0,
        );
    }
    let _ = writeln!(
        out,
        r#"<text x="14" y="{:.1}" font-size="12" text-anchor="middle" transform="rotate(-90 14 {:.1})">GB/s</text>"#,
        TOP + ph / 2.0,
        TOP + ph / 2.0
    );
    let gw = pw / groups.len().max(1) as f64;
    let bw = (gw * 0.8) / series.len().max(1) as f64;
    for (g, label) in groups.iter().enumerate() {
        let gx = LEFT + g as f64 * gw + gw * 0.1;
        for (k, (_, color, values)) in series.iter().enumerate() {
            if let Some(Some(v)) = values.get(g) {
                let bx = gx + k as f64 * bw;
                let _ = writeln!(
                    out,
                    r#"<rect x="{bx:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="{color}"/><text x="{:.1}" y="{:.1}" font-size="10" text-anchor="middle">{}</text>"#,
                    y(*v),
                    bw * 0.9,
                    TOP + ph - y(*v),
                    bx + bw * 0.45,
                    y(*v) - 3.0,
                    if *v >= 10.0 {
                        format!("{v:.0}")
                    } else {
                        format!("{v:.1}")
                    }
                );
            }
        }
        let _ = writeln!(
            out,
            r#"<text x="{:.1}" y="{:.1}" font-size="11" text-anchor="middle">{}</text>"#,
            LEFT + g as f64 * gw + gw / 2.0,
            TOP + ph + 16.0,
            esc(label)
        );
    }
    let _ = writeln!(
        out,
        r#"<rect x="{LEFT:.1}" y="{TOP:.1}" width="{pw:.1}" height="{ph:.1}" fill="none" stroke="black"/>"#
    );
    let legend_series: Vec<Series> = series
        .iter()
        .map(|(name, color, _)| Series {
            name: name.clone(),
            color,
            dashed: false,
            points: Vec::new(),
        })
        .collect();
    legend(&mut out, LEFT, TOP + ph + 36.0, &legend_series);
    let _ = writeln!(
        out,
        r##"<text x="8" y="{:.1}" font-size="10" fill="#555">{}</text>"##,
        height - 8.0,
        esc(caption)
    );
    out.push_str("</svg>\n");
    out
}
