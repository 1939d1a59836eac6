//! The comparison's PNG plots (plotters, DejaVu text): zero-loss rates, CPU per
//! answer, the client ramp, memory per record and load time. Bars are medians over
//! the kept runs; with several runs each bar gets a whisker from the lowest to the
//! highest run. Servers whose searches were tester-limited are marked †.

use std::path::Path;

use plotters::prelude::*;

use super::{summarize, ServerSummary, FONT};
use crate::compare::{CompareResult, QueryKind};

/// Loads the plot font once (leaked: plotters keeps fonts for the program's life).
fn load_font() -> Result<(), String> {
    use std::sync::OnceLock;
    static FONT_OK: OnceLock<Result<(), String>> = OnceLock::new();
    FONT_OK
        .get_or_init(|| {
            let bytes = std::fs::read(FONT).map_err(|e| format!("{FONT}: {e}"))?;
            let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
            plotters::style::register_font("sans-serif", FontStyle::Normal, bytes)
                .map_err(|_| format!("{FONT}: not a usable font"))
        })
        .clone()
}

const COLORS: [RGBColor; 6] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
];

/// One series of a bar chart: its label, a value per server and, per server, the
/// lowest and highest run (empty or None: no whisker).
type Series<'a> = (&'a str, Vec<f64>, Vec<Option<(f64, f64)>>);

/// The range `i` of [`ServerSummary::ranges`] of each server.
fn spans(v: &[&ServerSummary], i: usize) -> Vec<Option<(f64, f64)>> {
    v.iter().map(|x| x.ranges.map(|r| r[i])).collect()
}

/// Draws the four plots; returns their file names.
pub(super) fn plot_all(dir: &Path, r: &CompareResult) -> Result<Vec<&'static str>, String> {
    load_font()?;
    let s = summarize(r);
    if s.is_empty() {
        return Ok(Vec::new());
    }
    let names = |v: &[&ServerSummary]| -> Vec<String> {
        v.iter()
            .map(|x| format!("{}{}", x.server, if x.tester_limited { " †" } else { "" }))
            .collect()
    };
    let mut drawn = Vec::new();
    let queried: Vec<&ServerSummary> = s.iter().filter(|x| !x.memory_only()).collect();
    bars(
        &dir.join("rate.png"),
        "Zero-loss rate (q/s)",
        &names(&queried),
        &[
            (
                "existing",
                queried.iter().map(|x| x.existing).collect(),
                spans(&queried, 0),
            ),
            (
                "non-existing",
                queried.iter().map(|x| x.nxdomain).collect(),
                spans(&queried, 1),
            ),
        ],
    )?;
    drawn.push("rate.png");
    let fixed: Vec<&ServerSummary> = s.iter().filter(|x| !x.fixed.is_empty()).collect();
    if !fixed.is_empty() {
        let series: Vec<Series> = QueryKind::ALL
            .into_iter()
            .map(|q| {
                (
                    q.name(),
                    fixed.iter().map(|x| x.fixed_us(q).unwrap_or(0.0)).collect(),
                    Vec::new(),
                )
            })
            .collect();
        bars(
            &dir.join("cpu.png"),
            "Server CPU per answer at a fixed rate (µs)",
            &names(&fixed),
            &series,
        )?;
        drawn.push("cpu.png");
    }
    let ramped: Vec<ServerSummary> = s
        .iter()
        .filter(|x| !x.clients.is_empty())
        .cloned()
        .collect();
    if !ramped.is_empty() {
        clients_plot(&dir.join("clients.png"), &ramped)?;
        drawn.push("clients.png");
    }
    let servers: Vec<&ServerSummary> = s.iter().filter(|x| x.software != "echo").collect();
    if !servers.is_empty() {
        bars(
            &dir.join("memory.png"),
            "Memory per record (bytes)",
            &names(&servers),
            &[(
                "bytes/record",
                servers.iter().map(|x| x.bytes_per_record).collect(),
                spans(&servers, 3),
            )],
        )?;
        bars(
            &dir.join("loadtime.png"),
            "Load time: start to first answer (s)",
            &names(&servers),
            &[(
                "seconds",
                servers.iter().map(|x| x.load_secs).collect(),
                spans(&servers, 2),
            )],
        )?;
        drawn.extend(["memory.png", "loadtime.png"]);
    }
    Ok(drawn)
}

fn err<E: std::fmt::Display>(e: E) -> String {
    e.to_string()
}

/// A grouped bar chart: one group per server, one bar per series.
fn bars(path: &Path, title: &str, names: &[String], series: &[Series]) -> Result<(), String> {
    let root = BitMapBackend::new(path, (900, 500)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let top = series
        .iter()
        .flat_map(|(_, v, s)| v.iter().copied().chain(s.iter().flatten().map(|r| r.1)))
        .fold(0.0, f64::max)
        .max(1e-9)
        // Room above the bars for the legend.
        * if series.len() > 1 { 1.45 } else { 1.15 };
    let n = names.len();
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 24))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(80)
        .build_cartesian_2d(-0.5f64..(n as f64 - 0.5), 0f64..top)
        .map_err(err)?;
    let labels = names.to_vec();
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(n)
        .x_label_formatter(&move |x| {
            let i = x.round();
            if (x - i).abs() < 0.01 && i >= 0.0 {
                labels.get(i as usize).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        })
        .y_label_formatter(&|y| format!("{y:.0}"))
        .label_style(("sans-serif", 15))
        .draw()
        .map_err(err)?;
    let k = series.len() as f64;
    let width = 0.8 / k;
    for (j, (label, values, ranges)) in series.iter().enumerate() {
        let color = COLORS[j % COLORS.len()];
        chart
            .draw_series(values.iter().enumerate().map(|(i, v)| {
                let x0 = i as f64 - 0.4 + j as f64 * width;
                Rectangle::new([(x0, 0.0), (x0 + width * 0.95, *v)], color.filled())
            }))
            .map_err(err)?
            .label(*label)
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 10, y + 5)], color.filled()));
        chart
            .draw_series(values.iter().enumerate().map(|(i, v)| {
                let x = i as f64 - 0.4 + (j as f64 + 0.5) * width;
                // Above the whisker, if any.
                let y = ranges.get(i).copied().flatten().map_or(*v, |r| r.1.max(*v));
                Text::new(
                    if *v >= 100.0 {
                        format!("{v:.0}")
                    } else {
                        format!("{v:.2}")
                    },
                    (x - 0.1, y + top * 0.02),
                    ("sans-serif", 13),
                )
            }))
            .map_err(err)?;
        // Whiskers: lowest to highest run, with caps.
        let whiskers = ranges.iter().enumerate().filter_map(|(i, r)| {
            let (lo, hi) = (*r)?;
            let x = i as f64 - 0.4 + (j as f64 + 0.5) * width;
            let cap = width * 0.2;
            Some([
                PathElement::new(vec![(x, lo), (x, hi)], BLACK.stroke_width(2)),
                PathElement::new(vec![(x - cap, lo), (x + cap, lo)], BLACK.stroke_width(2)),
                PathElement::new(vec![(x - cap, hi), (x + cap, hi)], BLACK.stroke_width(2)),
            ])
        });
        chart.draw_series(whiskers.flatten()).map_err(err)?;
    }
    if series.len() > 1 {
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .label_font(("sans-serif", 15))
            .draw()
            .map_err(err)?;
    }
    root.present().map_err(err)
}

/// Throughput and p99 latency against the number of clients, one line per server.
fn clients_plot(path: &Path, s: &[ServerSummary]) -> Result<(), String> {
    let root = BitMapBackend::new(path, (1100, 500)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let (left, right) = root.split_horizontally(550);
    let max_c = s
        .iter()
        .flat_map(|x| x.clients.iter().map(|c| c.0))
        .max()
        .unwrap_or(1) as f64;
    for (area, title, pick) in [
        (&left, "Throughput against clients (q/s)", 1usize),
        (&right, "p99 latency against clients (µs)", 3usize),
    ] {
        let value = |c: &(usize, f64, f64, f64)| if pick == 1 { c.1 } else { c.3 };
        let top = s
            .iter()
            .flat_map(|x| x.clients.iter().map(value))
            .fold(0.0, f64::max)
            .max(1e-9)
            * 1.1;
        let mut chart = ChartBuilder::on(area)
            .caption(title, ("sans-serif", 20))
            .margin(12)
            .x_label_area_size(35)
            .y_label_area_size(70)
            .build_cartesian_2d(0f64..max_c + 0.5, 0f64..top)
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc("clients")
            .y_label_formatter(&|y| format!("{y:.0}"))
            .label_style(("sans-serif", 14))
            .draw()
            .map_err(err)?;
        for (j, x) in s.iter().enumerate() {
            let color = COLORS[j % COLORS.len()];
            let pts: Vec<(f64, f64)> = x.clients.iter().map(|c| (c.0 as f64, value(c))).collect();
            chart
                .draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))
                .map_err(err)?
                .label(x.server.clone())
                .legend(move |(a, b)| {
                    PathElement::new(vec![(a, b), (a + 15, b)], color.stroke_width(2))
                });
            chart
                .draw_series(pts.into_iter().map(|p| Circle::new(p, 4, color.filled())))
                .map_err(err)?;
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .label_font(("sans-serif", 14))
            .draw()
            .map_err(err)?;
    }
    root.present().map_err(err)
}
