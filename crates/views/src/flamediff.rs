//! Differential flame graphs (`scalpel flame --diff OLD NEW`): inferno's differential mode,
//! red where a stack gained time and blue where it lost some, and a title line that says so,
//! so that nobody reads the colours backwards.
//!
//! Widths: each stack's larger time of the two runs. inferno (like FlameGraph) draws the
//! second run's widths, so time that is gone from it is not drawn at all: the commit whose
//! 200 ms sleep was removed showed no sleep. We hand inferno the larger time as the second
//! count and the first count chosen so that their difference is still new − old; the colours
//! and the change in each frame's tooltip are exact, the widths are the union of both runs.

use std::io::{self, Write};

use inferno::flamegraph::{self, Options, Palette};
use scalpel_analysis::diff::FoldedDiff;

use super::flame::{write_nothing_svg, Weights};

/// Writes `d` as folded lines with two weights (`frame;frame;… OLD NEW`, the input of
/// `inferno-flamegraph` and FlameGraph's `difffolded.pl` output), in stack order; stacks
/// whose weights both round to 0 are left out.
pub fn write_diff_folded(w: &mut impl Write, d: &FoldedDiff, unit: Weights) -> io::Result<()> {
    for (stack, &(old, new)) in &d.stacks {
        let (o, n) = (unit.of(old), unit.of(new));
        if o > 0 || n > 0 {
            writeln!(w, "{stack} {o} {n}")?;
        }
    }
    Ok(())
}

/// The colour key every differential graph carries in its title line.
pub const COLOUR_KEY: &str = "Red: more time in the new run, blue: less.";

/// Writes `d` as a differential flame graph. `what` names the time and the selection (`Off-CPU
/// time per instance of commit`); the title line starts with the colour key (a long task name
/// may run off the line's end, the key never does), the subtitle names the two runs and says
/// what the widths are.
pub fn write_diff_flame_svg(
    w: &mut impl Write,
    d: &FoldedDiff,
    what: &str,
    runs: (&str, &str),
    note: &str,
    unit: Weights,
) -> io::Result<()> {
    let mut text = String::new();
    for (stack, &(old, new)) in &d.stacks {
        let (o, n) = (unit.of(old), unit.of(new));
        let width = o.max(n);
        if width > 0 {
            // width − first = n − o, the change inferno colours by.
            let first = width - n + o;
            text.push_str(&format!("{stack} {first} {width}\n"));
        }
    }
    let title = format!("{COLOUR_KEY} {what}");
    if text.is_empty() {
        return write_nothing_svg(w, what, unit);
    }
    let mut opts = Options::default();
    opts.title = title;
    opts.subtitle = Some(format!(
        "old: {}, new: {}{note}; widths (and tooltips): each stack's larger time of the two \
         runs, so that time lost shows as well as time gained",
        runs.0, runs.1
    ));
    opts.count_name = match d.per_instance {
        Some(_) => format!("{} per instance", unit.name()),
        None => unit.name().to_owned(),
    };
    opts.colors = Palette::Basic(inferno::flamegraph::color::BasicPalette::Aqua);
    opts.deterministic = true;
    flamegraph::from_lines(&mut opts, text.lines(), w)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn diff() -> FoldedDiff {
        FoldedDiff {
            stacks: BTreeMap::from([
                ("p;commit;fsync [io]".to_owned(), (40_000, 300_000)),
                ("p;commit;sleep [sleep]".to_owned(), (200_000_000, 0)),
                ("p;commit;tiny [read]".to_owned(), (100, 200)),
            ]),
            per_instance: Some((10, 3)),
        }
    }

    #[test]
    fn folded_lines_carry_both_runs_in_the_unit_and_skip_what_rounds_to_zero() {
        let mut out = Vec::new();
        write_diff_folded(&mut out, &diff(), Weights::Micros).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "p;commit;fsync [io] 40 300\np;commit;sleep [sleep] 200000 0\n"
        );
    }

    #[test]
    fn the_title_line_explains_the_colours_and_growth_is_red() {
        let mut svg = Vec::new();
        let runs = ("old/model.json", "new/model.json");
        let note = " (10 and 3 instances)";
        write_diff_flame_svg(
            &mut svg,
            &diff(),
            "Off-CPU time",
            runs,
            note,
            Weights::Nanos,
        )
        .unwrap();
        let text = String::from_utf8(svg).unwrap();
        assert!(text.contains(COLOUR_KEY), "{text}");
        assert!(text.contains("old: old/model.json, new: new/model.json (10 and 3 instances)"));
        assert!(text.contains("ns per instance"));
        // fsync grew: a red hue (r = 255); the sleep is gone from the new run and still
        // drawn, in a blue hue (b = 255).
        let fill = |frame: &str| {
            let at = text.find(frame).unwrap();
            let rect = &text[at..];
            let fill = rect.find("fill=\"rgb(").unwrap();
            rect[fill + 10..].split(')').next().unwrap().to_owned()
        };
        assert!(
            fill("fsync [io]").starts_with("255,"),
            "{}",
            fill("fsync [io]")
        );
        assert!(
            fill("sleep [sleep]").ends_with(",255"),
            "{}",
            fill("sleep [sleep]")
        );
    }
}
