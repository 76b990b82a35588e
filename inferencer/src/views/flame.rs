//! Flame graphs: folded stacks as text (the `a;b;c N` lines FlameGraph and inferno read) and as
//! SVG through inferno, each kind of wait in its own colour.

use std::io::{self, Write};

use inferno::flamegraph::color::{BasicPalette, Color, PaletteMap};
use inferno::flamegraph::{self, Options, Palette};

use crate::rollup::{kind_tag, BlockKind, Folded};

/// Writes `f` as folded lines, weights in microseconds (rounded; stacks under half a
/// microsecond are left out), in stack order.
pub fn write_folded(w: &mut impl Write, f: &Folded) -> io::Result<()> {
    for (stack, ns) in &f.stacks {
        let us = (ns + 500) / 1000;
        if us > 0 {
            writeln!(w, "{stack} {us}")?;
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

/// Writes `f` as an SVG flame graph titled `title`. Every frame that is a wait (`… [kind]`)
/// is coloured by its kind; the other frames take inferno's blue "io" palette.
pub fn write_flame_svg(w: &mut impl Write, f: &Folded, title: &str) -> io::Result<()> {
    let mut lines = Vec::new();
    write_folded(&mut lines, f)?;
    let text = String::from_utf8(lines).map_err(io::Error::other)?;
    if text.is_empty() {
        // inferno refuses an empty profile; the picture says there is nothing to draw.
        let title = title
            .replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;");
        return writeln!(
            w,
            "<?xml version=\"1.0\" standalone=\"no\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" \
             width=\"1200\" height=\"60\"><text x=\"10\" y=\"35\" font-family=\"Verdana\" \
             font-size=\"17\">{title}: no blocked time in this selection</text></svg>"
        );
    }
    let mut palette = PaletteMap::default();
    for stack in f.stacks.keys() {
        for fr in stack.split(';') {
            if let Some(k) = BlockKind::ALL.iter().find(|&&k| fr.ends_with(&kind_tag(k))) {
                palette.insert(fr, colour(*k));
            }
        }
    }
    let mut opts = Options::default();
    opts.title = title.to_owned();
    opts.count_name = "µs".to_owned();
    opts.colors = Palette::Basic(BasicPalette::Aqua);
    opts.deterministic = true;
    opts.palette_map = Some(&mut palette);
    flamegraph::from_lines(&mut opts, text.lines(), w).map_err(io::Error::other)
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
