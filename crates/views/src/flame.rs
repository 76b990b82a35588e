//! Flame graphs: folded stacks as text (the `a;b;c N` lines FlameGraph and inferno read) and as
//! SVG through inferno, each kind of wait in its own colour.

use std::io::{self, Write};

use inferno::flamegraph::color::{BasicPalette, Color, PaletteMap};
use inferno::flamegraph::{self, Options, Palette};

use scalpel_analysis::rollup::{kind_tag, BlockKind, Folded, OFF_CPU_SUFFIX};

/// The unit of a flame graph's weights.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Weights {
    /// Microseconds (rounded; stacks under half a microsecond are left out): off-CPU graphs.
    Micros,
    /// Samples at the sampling period (rounded; stacks under half a sample are left out):
    /// on-CPU and wall-clock graphs, waits converted at the same rate.
    Samples {
        /// The sampling period, ns.
        period_ns: u64,
    },
    /// Nanoseconds: a task type's time per instance (differential graphs of one task type).
    Nanos,
}

impl Weights {
    pub(crate) fn of(self, ns: u64) -> u64 {
        match self {
            Weights::Nanos => ns,
            Weights::Micros => (ns + 500) / 1000,
            Weights::Samples { period_ns } => {
                let p = period_ns.max(1);
                (ns + p / 2) / p
            }
        }
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            Weights::Micros => "µs",
            Weights::Nanos => "ns",
            Weights::Samples { .. } => "samples",
        }
    }
}

/// Writes `f` as folded lines, weights in microseconds (rounded; stacks under half a
/// microsecond are left out), in stack order.
pub fn write_folded(w: &mut impl Write, f: &Folded) -> io::Result<()> {
    write_folded_as(w, f, Weights::Micros)
}

/// Writes `f` as folded lines with weights in `unit`, in stack order.
pub fn write_folded_as(w: &mut impl Write, f: &Folded, unit: Weights) -> io::Result<()> {
    for (stack, ns) in &f.stacks {
        let n = unit.of(*ns);
        if n > 0 {
            writeln!(w, "{stack} {n}")?;
        }
    }
    Ok(())
}

/// The colour of each kind of wait: locks red, condition variables and futexes blue, channel
/// reads and writes green, polls teal, sleeps and joins grey, file I/O brown, idle pale.
fn colour(kind: BlockKind) -> Color {
    let (r, g, b) = match kind {
        BlockKind::Lock => (214, 69, 65),
        BlockKind::Cond | BlockKind::Sem | BlockKind::Futex => (91, 132, 196),
        BlockKind::Read | BlockKind::Write => (98, 168, 97),
        BlockKind::Poll => (70, 160, 160),
        BlockKind::Sleep | BlockKind::Join => (150, 150, 150),
        BlockKind::Io => (170, 120, 70),
        BlockKind::OffCpu | BlockKind::Queued => (230, 160, 60),
        BlockKind::Idle => (215, 215, 200),
    };
    Color { r, g, b }
}

/// Writes `f` as an SVG off-CPU flame graph titled `title`, in microseconds. Every frame that
/// is a wait (`… [kind]`) is coloured by its kind; the other frames take inferno's blue "io"
/// palette.
pub fn write_flame_svg(w: &mut impl Write, f: &Folded, title: &str) -> io::Result<()> {
    write_flame_svg_as(w, f, title, Weights::Micros)
}

/// Writes `f` as an SVG flame graph titled `title` with weights in `unit`. Waits are coloured
/// by kind (also with a wall-clock graph's `_[o]` suffix); other frames take the blue "io"
/// palette in microseconds (off-CPU) and the warm "hot" one in samples (on-CPU code).
pub fn write_flame_svg_as(
    w: &mut impl Write,
    f: &Folded,
    title: &str,
    unit: Weights,
) -> io::Result<()> {
    let mut lines = Vec::new();
    write_folded_as(&mut lines, f, unit)?;
    let text = String::from_utf8(lines).map_err(io::Error::other)?;
    if text.is_empty() {
        return write_nothing_svg(w, title, unit);
    }
    let mut palette = PaletteMap::default();
    for stack in f.stacks.keys() {
        for fr in stack.split(';') {
            let bare = fr.strip_suffix(OFF_CPU_SUFFIX).unwrap_or(fr);
            if let Some(k) = BlockKind::ALL
                .iter()
                .find(|&&k| bare.ends_with(&kind_tag(k)))
            {
                palette.insert(fr, colour(*k));
            }
        }
    }
    let mut opts = Options::default();
    opts.title = title.to_owned();
    opts.count_name = unit.name().to_owned();
    opts.colors = match unit {
        Weights::Micros | Weights::Nanos => Palette::Basic(BasicPalette::Aqua),
        Weights::Samples { .. } => Palette::Basic(BasicPalette::Hot),
    };
    opts.deterministic = true;
    opts.palette_map = Some(&mut palette);
    flamegraph::from_lines(&mut opts, text.lines(), w)
}

/// A picture that says there is nothing to draw: inferno refuses an empty profile.
pub(crate) fn write_nothing_svg(w: &mut impl Write, title: &str, unit: Weights) -> io::Result<()> {
    let title = title
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;");
    let what = match unit {
        Weights::Micros | Weights::Nanos => "no blocked time",
        Weights::Samples { .. } => "no samples",
    };
    writeln!(
        w,
        "<?xml version=\"1.0\" standalone=\"no\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" \
         width=\"1200\" height=\"60\"><text x=\"10\" y=\"35\" font-family=\"Verdana\" \
         font-size=\"17\">{title}: {what} in this selection</text></svg>"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_selection_still_draws_and_says_so() {
        let mut svg = Vec::new();
        write_flame_svg(&mut svg, &Folded::default(), "Off-CPU time").unwrap();
        let text = String::from_utf8(svg).unwrap();
        assert!(text.contains("no blocked time in this selection"), "{text}");
    }

    #[test]
    fn folded_lines_are_in_microseconds_and_skip_what_rounds_to_zero() {
        let mut f = Folded::default();
        f.stacks
            .insert("p;t;main;read [read]".to_owned(), 1_499_600);
        f.stacks
            .insert("p;t;main;[short lock waits] [lock]".to_owned(), 400);
        let mut out = Vec::new();
        write_folded(&mut out, &f).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "p;t;main;read [read] 1500\n"
        );
    }
}
